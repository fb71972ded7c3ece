import { describeConformance } from './conformance.js'

describeConformance('llama3')
