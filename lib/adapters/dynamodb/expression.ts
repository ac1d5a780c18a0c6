/**
 * Builds condition and update expressions. Names and values are registered as they are used,
 * because DynamoDB refuses a request that declares one its expressions do not use.
 * @example const x = new Expression(); const leaseExpired = `${x.name('until')} < ${x.value(now)}`;
 */
export class Expression {
  readonly #names: Record<string, string> = {};
  readonly #values: Record<string, unknown> = {};
  #next = 0;

  /** `#attr`, an attribute name placeholder. */
  name(attribute: string): string {
    const placeholder = `#${attribute}`;
    this.#names[placeholder] = attribute;
    return placeholder;
  }

  /** `:vN`, a value placeholder. */
  value(value: unknown): string {
    const placeholder = `:v${this.#next++}`;
    this.#values[placeholder] = value;
    return placeholder;
  }

  /** The attribute maps for the request (values omitted when none: DynamoDB refuses an empty map). */
  attributes(): {
    ExpressionAttributeNames: Record<string, string>;
    ExpressionAttributeValues?: Record<string, unknown>;
  } {
    return Object.keys(this.#values).length === 0
      ? { ExpressionAttributeNames: this.#names }
      : { ExpressionAttributeNames: this.#names, ExpressionAttributeValues: this.#values };
  }
}

/** `a AND b AND …`, skipping parts that do not apply. */
export const allOf = (...parts: Array<string | false | undefined>): string =>
  parts.filter((part): part is string => typeof part === 'string').join(' AND ');
