import { Environment, Interpreter, Template } from '@huggingface/jinja'
import { TokenizerLimitError, type TokenizerLimits } from '../tokenizer-limits.js'
import { pythonStrip } from './python-string-methods.js'

const helperNames = { both: '__ludic_python_strip', left: '__ludic_python_lstrip', right: '__ludic_python_rstrip' } as const
const methodSides: Record<string, keyof typeof helperNames> = { strip: 'both', lstrip: 'left', rstrip: 'right' }

interface Node {
  type: string
  [field: string]: unknown
}

function isNode(value: unknown): value is Node {
  return typeof value === 'object' && value !== null && typeof (value as { type?: unknown }).type === 'string'
}

/**
 * Rewrites, in a parsed template, the places where `@huggingface/jinja` departs from Python's Jinja
 * into calls to helpers that behave like Python:
 * - `x.strip(chars)`, `x.lstrip(chars)`, `x.rstrip(chars)`: the argument was ignored;
 * - `x | trim` and `x | trim(chars)`: JavaScript's `trim` white space differs from Python's.
 * Nodes are rewritten in place (the interpreter dispatches on `type`), reusing the parser's
 * `Identifier` class for the helper names.
 */
function rewriteStringMethods(node: Node, makeIdentifier: (name: string) => Node): void {
  if (node.type === 'CallExpression') {
    const callee = node.callee
    if (isNode(callee) && callee.type === 'MemberExpression' && callee.computed === false && isNode(callee.property) && callee.property.type === 'Identifier') {
      const side = methodSides[callee.property.value as string]
      if (side !== undefined) {
        node.args = [callee.object, ...(node.args as unknown[])]
        node.callee = makeIdentifier(helperNames[side])
      }
    }
  } else if (node.type === 'FilterExpression') {
    const filter = node.filter
    const isTrim = (candidate: unknown): boolean => isNode(candidate) && candidate.type === 'Identifier' && candidate.value === 'trim'
    let extraArguments: unknown[] | undefined
    if (isTrim(filter)) extraArguments = []
    else if (isNode(filter) && filter.type === 'CallExpression' && isTrim(filter.callee)) extraArguments = filter.args as unknown[]
    if (extraArguments !== undefined) {
      const operand = node.operand
      delete node.operand
      delete node.filter
      node.type = 'CallExpression'
      node.callee = makeIdentifier(helperNames.both)
      node.args = [operand, ...extraArguments]
    }
  }
  for (const value of Object.values(node)) {
    if (Array.isArray(value)) {
      for (const item of value) if (isNode(item)) rewriteStringMethods(item, makeIdentifier)
    } else if (value instanceof Map) {
      for (const [key, item] of value) {
        if (isNode(key)) rewriteStringMethods(key, makeIdentifier)
        if (isNode(item)) rewriteStringMethods(item, makeIdentifier)
      }
    } else if (isNode(value)) rewriteStringMethods(value, makeIdentifier)
  }
}

/** Finds one `Identifier` node in the tree, to borrow its class. */
function findIdentifier(node: Node): Node | undefined {
  if (node.type === 'Identifier') return node
  for (const value of Object.values(node)) {
    const items = Array.isArray(value) ? value : value instanceof Map ? [...value.keys(), ...value.values()] : [value]
    for (const item of items) {
      if (!isNode(item)) continue
      const found = findIdentifier(item)
      if (found !== undefined) return found
    }
  }
  return undefined
}

/** The nodes a `{% for %}` loops over (their value's length is charged as loop iterations). */
function findLoopIterables(node: Node, found: Set<unknown>): Set<unknown> {
  if (node.type === 'For' && isNode(node.iterable)) found.add(node.iterable.type === 'SelectExpression' ? node.iterable.lhs : node.iterable)
  for (const value of Object.values(node)) {
    const items = Array.isArray(value) ? value : value instanceof Map ? [...value.keys(), ...value.values()] : [value]
    for (const item of items) if (isNode(item)) findLoopIterables(item, found)
  }
  return found
}

/** A compiled chat template: renders with Python Jinja's behavior where `@huggingface/jinja` differs, within `limits`. */
export interface CompiledTemplate {
  render(context: Record<string, unknown>, limits: TokenizerLimits): string
}

type Evaluate = Interpreter['evaluate']
type RuntimeValue = ReturnType<Evaluate>

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

/**
 * `@huggingface/jinja`'s interpreter, bounded as Python Jinja's sandbox bounds `range`: every evaluated
 * node is a step and every loop iteration ten (`maxChatTemplateSteps`), no string or list it builds may be
 * longer than `maxChatTemplateLength`, and the rendering stops after `chatTemplateTimeoutMs`. Each node's
 * value is checked as it is made, so a doubling string stops at twice the limit, and a long string that
 * is never read whole (an `indent` of 10^8 spaces) is never flattened.
 */
class BoundedInterpreter extends Interpreter {
  private steps = 0
  private nextClockReading = stepsBetweenClockReadings
  private readonly started = performance.now()

  constructor(
    environment: Environment,
    private readonly loopIterables: ReadonlySet<unknown>,
    private readonly limits: TokenizerLimits,
  ) {
    super(environment)
  }

  override evaluate(statement: Parameters<Evaluate>[0], environment: Parameters<Evaluate>[1]): RuntimeValue {
    this.charge(1)
    const value = super.evaluate(statement, environment)
    const size = sizeOf(value)
    if (size > this.limits.maxChatTemplateLength) {
      throw new TokenizerLimitError({ limit: 'maxChatTemplateLength', value: size, limits: this.limits, what: `a ${value.type} of the chat template` })
    }
    if (this.loopIterables.has(statement)) this.charge(size * stepsPerLoopIteration)
    return value
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
    const count = Math.max(0, Math.ceil((end - first) / step))
    if (count > limits.maxChatTemplateRange) {
      throw new TokenizerLimitError({ limit: 'maxChatTemplateRange', value: count, limits, what: `range() of ${count} items` })
    }
    return Array.from({ length: count }, (_, index) => first + index * step)
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

/**
 * Compiles a Jinja template with `@huggingface/jinja` (trim_blocks and lstrip_blocks on, as
 * transformers), then fixes the differences from Python Jinja that chat templates meet (see
 * `rewriteStringMethods`). Like Python Jinja (`keep_trailing_newline=False`), one newline at the
 * very end of the template is dropped.
 */
export function compilePythonCompatibleTemplate(source: string): CompiledTemplate {
  const trimmed = source.endsWith('\r\n') ? source.slice(0, -2) : source.endsWith('\n') ? source.slice(0, -1) : source
  const template = new Template(trimmed)
  const program = template.parsed as unknown as Node
  const identifier = findIdentifier(program)
  if (identifier !== undefined) {
    const IdentifierClass = identifier.constructor as new (name: string) => Node
    rewriteStringMethods(program, (name) => new IdentifierClass(name))
  }
  const loopIterables = findLoopIterables(program, new Set())
  return {
    render: (context, limits) => {
      // What `Template.render` does, with the bounded interpreter and `range`.
      const environment = new Environment()
      const items = {
        ...templateGlobals(limits),
        ...context,
        [helperNames.both]: (value: unknown, characters?: unknown) => pythonStrip(value, 'both', characters),
        [helperNames.left]: (value: unknown, characters?: unknown) => pythonStrip(value, 'left', characters),
        [helperNames.right]: (value: unknown, characters?: unknown) => pythonStrip(value, 'right', characters),
      }
      for (const [name, value] of Object.entries(items)) environment.set(name, value)
      const output = new BoundedInterpreter(environment, loopIterables, limits).run(template.parsed).value
      return String(output)
    },
  }
}
