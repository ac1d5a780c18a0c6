/** The invocation a kick runs in: its id and a real deadline. */
export interface Invocation {
  readonly requestId: string;
  remainingMs(): number;
}
