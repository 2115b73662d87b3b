// The messages components exchange: their type names, which type is a kind of which, and the
// fields one component kind adds for another downstream. The catalog (catalog.ts) declares each
// kind's types and fields with these; the link checks (workflow-links.ts) compare them.

/** Type names of the messages components exchange, as written in `inputType` and `outputType`. */
export const MESSAGE_TYPES = {
  /** A message whose body is a JSON object. */
  JSON: 'loom.messages.JsonMessage',
  /** A message whose body holds `node_id`, the id of a document node in an NLP graph. */
  NODE_ID: 'loom.messages.NodeIdMessage',
  /** No message: the input of a source (it takes none from links), the output of a sink. */
  NONE: 'loom.messages.None',
  /** What a failure handler receives: a JSON message naming the failed component, the error and the message. */
  FAILURE: 'loom.messages.FailureMessage',
} as const;

/** Message types that are a kind of another, which a component taking the other accepts too. */
const MESSAGE_SUPERTYPES: Readonly<Record<string, string>> = Object.freeze({
  [MESSAGE_TYPES.NODE_ID]: MESSAGE_TYPES.JSON,
  [MESSAGE_TYPES.FAILURE]: MESSAGE_TYPES.JSON,
});

/** Whether a component whose `inputType` is `inputType` takes messages of `messageType` (the same type or a kind of it). */
export function messageTypeAccepts(inputType: string, messageType: string): boolean {
  for (let type: string | undefined = messageType; type !== undefined; type = MESSAGE_SUPERTYPES[type]) if (type === inputType) return true;
  return false;
}

/** Message fields one component kind adds and another needs, by what they hold (a skill's mapping may rename the field itself). */
export const MESSAGE_FIELDS = {
  /** The id of a document node in an NLP graph (the Token Occurrence Writer adds it). */
  NODE_ID: 'node_id',
  /** An entity extraction's annotation of the text (`_annotation` unless its skill configuration maps it elsewhere). */
  ANNOTATION: 'annotation',
} as const;

/** The message fields a component kind adds and those it needs a component upstream to have added. */
export interface MessageFieldFlow {
  readonly adds: readonly string[];
  readonly needs: readonly string[];
}
