import { describeConformance } from './conformance.js'

describeConformance('qwen3')
