import { type JsonLine, JsonlTail, type JsonlTailOptions, type SkippedLine } from './jsonl-tail.js'

export interface JsonlIndexOptions extends JsonlTailOptions {
  /** Items kept at most; later lines are skipped with a reason. */
  maxItems: number
  /** Skipped lines listed at most (all are counted). Default 1000. */
  maxSkippedListed?: number
}

/** What one refresh of an index added. */
export interface JsonlIndexChange<Item> {
  /** Everything before was dropped: the file was rewritten (see `JsonlTail`). */
  reset: boolean
  added: Item[]
}

/**
 * The items of a JSON Lines file in a run directory, kept up to date by `refresh` (`JsonlTail` reads only what was
 * appended): each line goes through `parse`, which returns its item or the reason the line is skipped.
 * Lines skipped (too long, not JSON, refused by `parse`, past `maxItems`) are counted and listed with their line numbers.
 */
export class JsonlIndex<Item> {
  readonly items: Item[] = []
  private listed: SkippedLine[] = []
  private count = 0
  private pending: SkippedLine | undefined
  private refused: string | undefined
  private readonly tail: JsonlTail
  private readonly maxItems: number
  private readonly maxSkippedListed: number

  constructor(
    root: string,
    name: string,
    private readonly parse: (line: JsonLine) => { item: Item } | { skip: string },
    options: JsonlIndexOptions,
  ) {
    this.tail = new JsonlTail(root, name, options)
    this.maxItems = options.maxItems
    this.maxSkippedListed = options.maxSkippedListed ?? 1000
  }

  /** Lines skipped so far (at most `maxSkippedListed`), then the incomplete last line or why the file is not read. */
  get skipped(): SkippedLine[] {
    return [...(this.refused === undefined ? [] : [{ line: 0, reason: this.refused }]), ...this.listed, ...(this.pending === undefined ? [] : [this.pending])]
  }

  /** Lines skipped in all (the listing may be shorter). */
  get skippedCount(): number {
    return this.count + (this.refused === undefined ? 0 : 1) + (this.pending === undefined ? 0 : 1)
  }

  /** The JSON value of a line an item came from (see `JsonlTail.readLine`). */
  readLine(offset: number, length: number): Promise<unknown> {
    return this.tail.readLine(offset, length)
  }

  async refresh(): Promise<JsonlIndexChange<Item>> {
    const poll = await this.tail.poll()
    if (poll.reset) {
      this.items.length = 0
      this.listed = []
      this.count = 0
    }
    this.pending = poll.pending
    this.refused = poll.refused
    const added: Item[] = []
    const skip = (skipped: SkippedLine) => {
      this.count++
      if (this.listed.length < this.maxSkippedListed) this.listed.push(skipped)
    }
    const lines = [...poll.lines.map((line) => ({ line })), ...poll.skipped.map((skipped) => ({ skipped }))].sort(
      (a, b) => ('line' in a ? a.line.line : a.skipped.line) - ('line' in b ? b.line.line : b.skipped.line),
    )
    for (const entry of lines) {
      if ('skipped' in entry) {
        skip(entry.skipped)
        continue
      }
      if (this.items.length >= this.maxItems) {
        skip({ line: entry.line.line, reason: `past the ${this.maxItems} items the viewer keeps: not shown` })
        continue
      }
      const parsed = this.parse(entry.line)
      if ('skip' in parsed) {
        skip({ line: entry.line.line, reason: parsed.skip })
        continue
      }
      this.items.push(parsed.item)
      added.push(parsed.item)
    }
    return { reset: poll.reset, added }
  }
}
