import { describeConformance } from './conformance.js'

describeConformance('llama2')
