import { describeConformance } from './conformance.js'

describeConformance('gpt4o')
