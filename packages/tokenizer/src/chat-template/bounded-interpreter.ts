/**
 * Chat templates come with tokenizers from anywhere: rendering one must not run out of memory or time.
 * Python Jinja's sandbox caps `range` (`MAX_RANGE`); this renders with `@huggingface/jinja`'s interpreter,
 * subclassed to bound, within `TokenizerLimits`:
 *
 * - `range()`: at most `maxChatTemplateRange` items, refused before any is made;
 * - work: every evaluated node is a step and every loop iteration ten, at most `maxChatTemplateSteps`;
 * - size: no string or list the template builds may be longer than `maxChatTemplateLength`. Each node's
 *   value is checked as it is made, so a doubling string stops at twice the limit, and a long value that
 *   is never read whole (an `indent` of 10^8 spaces is a rope) is never flattened. The builtins whose
 *   output multiplies two sizes (`indent(width)`, `tojson(indent=…)`, `join(separator)`, `replace`) are
 *   checked *before* they run, from their operand and arguments: their output could take a second to build;
 * - time: `chatTemplateTimeoutMs`, a last resort (one step may scan a long string).
 *
 * Past a limit, a `TokenizerLimitError`.
 */
import { Environment, Interpreter, Template } from '@huggingface/jinja'
import { TokenizerLimitError, type TokenizerLimits } from '../tokenizer-limits.js'

interface Node {
  type: string
  [field: string]: unknown
}

function isNode(value: unknown): value is Node {
  return typeof value === 'object' && value !== null && typeof (value as { type?: unknown }).type === 'string'
}

function forEachNode(node: Node, visit: (node: Node) => void): void {
  visit(node)
  for (const value of Object.values(node)) {
    const items = Array.isArray(value) ? value : value instanceof Map ? [...value.keys(), ...value.values()] : [value]
    for (const item of items) if (isNode(item)) forEachNode(item, visit)
  }
}

type Evaluate = Interpreter['evaluate']
type RuntimeValue = ReturnType<Evaluate>

/** A builtin whose output size is checked before it runs, from the values of `nodes` (operand and arguments). */
interface SizeGuard {
  name: string
  nodes: readonly unknown[]
  /** An upper bound on the output's length, from the nodes' values. */
  estimate(values: readonly RuntimeValue[]): number
}

/** What a bounded rendering needs to know of a parsed template, found once when it compiles. */
export interface TemplateBounds {
  /** The nodes a `{% for %}` loops over: their value's length is charged as loop iterations. */
  loopIterables: ReadonlySet<unknown>
  /** The size guards each node's value takes part in, with its place among the guard's values. */
  guardsByNode: ReadonlyMap<unknown, readonly { guard: SizeGuard; index: number }[]>
}

const textOf = (value: RuntimeValue | undefined): string => (typeof value?.value === 'string' ? value.value : '')
const numberOf = (value: RuntimeValue | undefined): number => (typeof value?.value === 'number' ? value.value : 0)

function count(text: string, part: string): number {
  if (part.length === 0) return text.length + 1
  let found = 0
  for (let at = text.indexOf(part); at >= 0; at = text.indexOf(part, at + part.length)) found++
  return found
}

/** An upper bound on the length of `tojson(indent=width)` of a value (each item on its own line, indented by depth). */
function indentedJsonLength(value: RuntimeValue, width: number): number {
  let length = 0
  const stack: [RuntimeValue, number][] = [[value, 0]]
  while (stack.length > 0) {
    const [item, depth] = stack.pop()!
    const contents: unknown = item.value
    if (typeof contents === 'string') length += contents.length * 6 + 2
    else if (Array.isArray(contents) || contents instanceof Map) {
      const children = (Array.isArray(contents) ? contents : [...contents.values()]) as RuntimeValue[]
      if (contents instanceof Map) for (const key of contents.keys()) length += String(key).length * 6 + 4
      length += 2 + (children.length + 1) * (2 + width * (depth + 1))
      for (const child of children) stack.push([child, depth + 1])
    } else length += 24
  }
  return length
}

/** The arguments of a call: positional `index`, or keyword `name`. */
function argumentNode(args: unknown, index: number, name: string): unknown {
  if (!Array.isArray(args)) return undefined
  const keyword = args.find((argument) => isNode(argument) && argument.type === 'KeywordArgumentExpression' && (argument.key as Node).value === name) as
    | Node
    | undefined
  if (keyword !== undefined) return keyword.value
  const positional = args.filter((argument) => isNode(argument) && argument.type !== 'KeywordArgumentExpression')
  return index < 0 ? undefined : positional[index]
}

/** The size guard of a filter or method call node, if it is one of the builtins whose output multiplies sizes. */
function sizeGuardOf(node: Node): SizeGuard | undefined {
  let name: string | undefined
  let operand: unknown
  let args: unknown
  if (node.type === 'FilterExpression' && isNode(node.filter) && node.filter.type === 'CallExpression' && isNode(node.filter.callee)) {
    name = node.filter.callee.value as string
    operand = node.operand
    args = node.filter.args
  } else if (node.type === 'CallExpression' && isNode(node.callee) && node.callee.type === 'MemberExpression' && isNode(node.callee.property)) {
    name = node.callee.property.value === 'replace' && node.callee.computed === false ? 'replace' : undefined
    operand = node.callee.object
    args = node.args
  }
  const guard = (nodes: unknown[], estimate: SizeGuard['estimate']): SizeGuard | undefined =>
    nodes.every((candidate) => candidate !== undefined) ? { name: name!, nodes, estimate } : undefined
  switch (name) {
    case 'indent':
      return guard(
        [operand, argumentNode(args, 0, 'width')],
        ([text, width]) => textOf(text).length + Math.max(0, numberOf(width)) * (count(textOf(text), '\n') + 1),
      )
    case 'tojson':
      return guard([operand, argumentNode(args, -1, 'indent')], ([value, width]) => (numberOf(width) > 0 ? indentedJsonLength(value!, numberOf(width)) : 0))
    case 'join':
      return guard([operand, argumentNode(args, 0, 'separator')], ([items, separator]) => {
        const contents: unknown = items?.value
        const parts = typeof contents === 'string' ? contents.length : Array.isArray(contents) ? contents.length : 0
        const partsLength =
          typeof contents === 'string'
            ? contents.length
            : Array.isArray(contents)
              ? contents.reduce((sum: number, part: RuntimeValue) => sum + (typeof part.value === 'string' ? part.value.length : 24), 0)
              : 0
        return partsLength + Math.max(0, parts - 1) * textOf(separator).length
      })
    case 'replace':
      return guard([operand, argumentNode(args, 0, 'old'), argumentNode(args, 1, 'new')], ([text, old, replacement]) => {
        const grows = textOf(replacement).length - textOf(old).length
        return textOf(text).length + (grows > 0 ? count(textOf(text), textOf(old)) * grows : 0)
      })
    default:
      return undefined
  }
}

/** Finds the loops and the size-multiplying builtins of a parsed template. */
export function findTemplateBounds(program: unknown): TemplateBounds {
  const loopIterables = new Set<unknown>()
  const guardsByNode = new Map<unknown, { guard: SizeGuard; index: number }[]>()
  if (!isNode(program)) return { loopIterables, guardsByNode }
  forEachNode(program, (node) => {
    if (node.type === 'For' && isNode(node.iterable)) loopIterables.add(node.iterable.type === 'SelectExpression' ? node.iterable.lhs : node.iterable)
    const guard = sizeGuardOf(node)
    if (guard === undefined) return
    guard.nodes.forEach((guarded, index) => {
      let guards = guardsByNode.get(guarded)
      if (guards === undefined) guardsByNode.set(guarded, (guards = []))
      guards.push({ guard, index })
    })
  })
  return { loopIterables, guardsByNode }
}

/** A loop iteration costs about ten evaluation steps (a scope and a `loop` object per item). */
const stepsPerLoopIteration = 10
/** The clock is read every this many steps. */
const stepsBetweenClockReadings = 64

/** The number of items of a string, list or mapping value (0 for others). */
function sizeOf(value: RuntimeValue): number {
  const contents: unknown = value.value
  if (typeof contents === 'string' || Array.isArray(contents)) return contents.length
  return contents instanceof Map ? contents.size : 0
}

/** `@huggingface/jinja`'s interpreter, bounded (see the top of this file). */
class BoundedInterpreter extends Interpreter {
  private steps = 0
  private nextClockReading = stepsBetweenClockReadings
  private readonly started = performance.now()
  /** The values seen so far of each size guard's nodes, until all are (then it is checked and forgotten). */
  private readonly guardValues = new Map<SizeGuard, (RuntimeValue | undefined)[]>()

  constructor(
    environment: Environment,
    private readonly bounds: TemplateBounds,
    private readonly limits: TokenizerLimits,
  ) {
    super(environment)
  }

  override evaluate(statement: Parameters<Evaluate>[0], environment: Parameters<Evaluate>[1]): RuntimeValue {
    this.charge(1)
    const value = super.evaluate(statement, environment)
    const size = sizeOf(value)
    if (size > this.limits.maxChatTemplateLength) this.tooLong(`a ${value.type} of the chat template`, size)
    if (this.bounds.loopIterables.has(statement)) this.charge(size * stepsPerLoopIteration)
    const guards = this.bounds.guardsByNode.get(statement)
    if (guards !== undefined) for (const { guard, index } of guards) this.record(guard, index, value)
    return value
  }

  /** Records the value of one of a guard's nodes; once all are known, checks the builtin's output size. */
  private record(guard: SizeGuard, index: number, value: RuntimeValue): void {
    let values = this.guardValues.get(guard)
    if (values === undefined) this.guardValues.set(guard, (values = new Array<RuntimeValue | undefined>(guard.nodes.length).fill(undefined)))
    values[index] = value
    if (values.includes(undefined)) return
    this.guardValues.delete(guard)
    const length = guard.estimate(values as RuntimeValue[])
    if (length > this.limits.maxChatTemplateLength) this.tooLong(`the ${guard.name} of the chat template would make a string whose length`, length)
  }

  private tooLong(what: string, length: number): never {
    throw new TokenizerLimitError({ limit: 'maxChatTemplateLength', value: length, limits: this.limits, what })
  }

  private charge(steps: number): void {
    this.steps += steps
    if (this.steps > this.limits.maxChatTemplateSteps) {
      throw new TokenizerLimitError({ limit: 'maxChatTemplateSteps', value: this.steps, limits: this.limits, what: 'the work of the chat template, in steps,' })
    }
    if (this.steps < this.nextClockReading) return
    this.nextClockReading = this.steps + stepsBetweenClockReadings
    const elapsed = Math.round(performance.now() - this.started)
    if (elapsed > this.limits.chatTemplateTimeoutMs) {
      throw new TokenizerLimitError({
        limit: 'chatTemplateTimeoutMs',
        value: elapsed,
        limits: this.limits,
        what: 'the time spent rendering the chat template, in ms,',
      })
    }
  }
}

/**
 * `range(stop)` / `range(start, stop, step)` as `@huggingface/jinja`'s, refusing more than
 * `maxChatTemplateRange` items before making any (Python Jinja's sandbox: `MAX_RANGE`).
 */
function boundedRange(limits: TokenizerLimits): (start: unknown, stop?: unknown, step?: unknown) => number[] {
  return (start, stop, step = 1) => {
    const [first, end] = stop === undefined ? [0, start] : [start, stop]
    if (typeof first !== 'number' || typeof end !== 'number' || typeof step !== 'number' || ![first, end, step].every(Number.isFinite)) {
      throw new Error('range() arguments must be finite numbers')
    }
    if (step === 0) throw new Error('range() step must not be zero')
    const length = Math.max(0, Math.ceil((end - first) / step))
    if (length > limits.maxChatTemplateRange) {
      throw new TokenizerLimitError({ limit: 'maxChatTemplateRange', value: length, limits, what: `range() of ${length} items` })
    }
    return Array.from({ length }, (_, index) => first + index * step)
  }
}

let strftimeTemplate: Template | undefined

/** The globals `@huggingface/jinja` sets up for a rendering, with `range` bounded; `strftime_now` is the library's own. */
function templateGlobals(limits: TokenizerLimits): Record<string, unknown> {
  return {
    false: false,
    true: true,
    none: null,
    False: false,
    True: true,
    None: null,
    raise_exception: (message: unknown) => {
      throw new Error(String(message))
    },
    range: boundedRange(limits),
    strftime_now: (format: unknown) => (strftimeTemplate ??= new Template('{{ strftime_now(format) }}')).render({ format }),
  }
}

/** Renders a parsed template with `items` as variables, as `Template.render` does, but bounded by `limits`. */
export function renderBounded(program: Template['parsed'], bounds: TemplateBounds, items: Record<string, unknown>, limits: TokenizerLimits): string {
  const environment = new Environment()
  for (const [name, value] of Object.entries({ ...templateGlobals(limits), ...items })) environment.set(name, value)
  return String(new BoundedInterpreter(environment, bounds, limits).run(program).value)
}
