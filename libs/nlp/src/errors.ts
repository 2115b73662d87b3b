import { LoomError } from '@loom/domain';

/** A CoNLL-U or IOB2 text is malformed; names the source and the 1-based line. */
export class CorpusFormatError extends LoomError {
  readonly kind = 'invalid-argument';

  constructor(
    readonly source: string,
    readonly line: number,
    readonly problem: string,
  ) {
    super(`${source}:${line}: ${problem}`);
  }
}

/** A model file is missing, truncated, or fails its checksum; never silently replaced. */
export class ModelLoadError extends LoomError {
  readonly kind = 'failed-precondition';

  constructor(
    readonly model: string,
    readonly problem: string,
    options?: { cause?: unknown },
  ) {
    super(`model '${model}': ${problem}`, options);
  }
}

/** An annotate() option is wrong; names the option. */
export class AnnotateOptionError extends LoomError {
  readonly kind = 'invalid-argument';

  constructor(
    readonly field: string,
    readonly problem: string,
  ) {
    super(`${field}: ${problem}`);
  }
}
