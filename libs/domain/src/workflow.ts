// The shapes of the specification's `.workflow.json` file and of loom's `.scheduler.json` file,
// field for field. libs/domain/src/workflow-json.ts reads and writes them, workflow-proto.ts
// converts them to and from the loom.v1 messages.

/** Kinds of component, as written in `component.type`. */
export const COMPONENT_TYPES = ['SOURCE', 'PROCESSOR', 'SKILL', 'PERSISTENCE', 'DATA_SCIENCE', 'SINK'] as const;
/** Kind of a component (the specification shows PERSISTENCE; the rest are loom's). */
export type ComponentTypeName = (typeof COMPONENT_TYPES)[number];

/** States of a component kind, as written in `component.state`. */
export const COMPONENT_STATES = ['AVAILABLE', 'DISABLED'] as const;
/** Whether a component kind can be used here (DISABLED: experimental while experiments are off). */
export type ComponentStateName = (typeof COMPONENT_STATES)[number];

/** Types of option value, as written in an option definition's `type`. */
export const OPTION_TYPES = ['BOOLEAN', 'INTEGER', 'NUMBER', 'STRING', 'TEXT', 'SCRIPT', 'JSON', 'COMPONENT_SELECTION_FAILURE_HANDLER'] as const;
/** Type of an option value. */
export type OptionTypeName = (typeof OPTION_TYPES)[number];

/** Types of resource parameter, as written in a parameter definition's `type`. */
export const PARAMETER_TYPES = ['STRING', 'INTEGER', 'BOOLEAN', 'PASSWORD'] as const;
/** Type of a resource parameter. */
export type ParameterTypeName = (typeof PARAMETER_TYPES)[number];

/** Capabilities a skill microservice can fulfil. */
export const SKILL_CAPABILITIES = ['ENTITY_EXTRACTION', 'KEYWORD_EXTRACTION', 'WEB_DATA_EXTRACTION', 'PDF_PARSING'] as const;
/** Capability a skill microservice fulfils. */
export type SkillCapabilityName = (typeof SKILL_CAPABILITIES)[number];

/** What a scheduler does with a fire while the previous run is still going. */
export const OVERLAP_POLICIES = ['SKIP', 'QUEUE', 'ALLOW'] as const;
/** Overlap policy of a schedule. */
export type OverlapPolicyName = (typeof OVERLAP_POLICIES)[number];

/** What a scheduler does with fires missed while loom was down. */
export const CATCH_UP_POLICIES = ['NONE', 'LATEST', 'ALL'] as const;
/** Catch-up policy of a schedule. */
export type CatchUpPolicyName = (typeof CATCH_UP_POLICIES)[number];

/** A workflow configuration: the contents of a `<workflow_name>_<uuid>.workflow.json` file. */
export interface WorkflowConfiguration {
  /** `<workflow_name>_<uuid>`; may contain spaces. */
  name: string;
  autoStart: boolean;
  components: ComponentInstance[];
  links: Link[];
  resources: ResourceInstance[];
  skills: Skill[];
  workflowResources: ResourceInstance[];
}

/** A directed link between two component instances of the same workflow, by instance name. */
export interface Link {
  from: string;
  to: string;
}

/** A value chosen for one option of a component instance. */
export interface OptionValue {
  name: string;
  /** Any JSON value, typed by the option definition of the same name. */
  value: unknown;
}

/** Mapping of message fields to skill inputs and of skill outputs to message fields. */
export interface SkillConfiguration {
  inputs: Record<string, unknown>;
  outputs: Record<string, unknown>;
}

/** One component of a workflow, with the values chosen for its options. */
export interface ComponentInstance {
  /** `<component_name>_<uuid>`. */
  name: string;
  component: ComponentDefinition;
  options: OptionValue[];
  /** The resource the component uses; null (what the parser returns) or absent when none. */
  resource?: ResourceInstance | null;
  /** The skill the component calls; null for non-skill components. */
  skill: Skill | null;
  skillConfiguration: SkillConfiguration;
}

/** What a component kind is: its identity, its message types and its options. */
export interface ComponentDefinition {
  qualifiedName: string;
  name: string;
  type: ComponentTypeName;
  state: ComponentStateName;
  /** Type name of the input message. */
  inputType: string;
  /** Type name of the output message. */
  outputType: string;
  options: OptionDefinition[];
  /** Type name of the resource kind the component needs; null when none. */
  resource: string | null;
  capabilityQualifiedName: string | null;
  experimental: boolean | null;
  dryRunSupported: boolean;
}

/** One option a component kind accepts. */
export interface OptionDefinition {
  /** Values seen: Main, Advanced, Failure Handling. */
  group: string;
  name: string;
  type: OptionTypeName;
  label: string;
  required: boolean;
  /** Default value typed by `type`, or null when there is none. */
  defaultValue: unknown;
  overridable: boolean;
}

/** A configured resource (a database connection, say) used by components. */
export interface ResourceInstance {
  /** `<resource_name>_<uuid>`. */
  name: string;
  resource: ResourceDefinition;
  /** Values by parameter name; `$$<variable>` before sealing, `###AES-<encrypted>` after. */
  parameters: Record<string, unknown>;
}

/** One parameter a resource kind takes. */
export interface ParameterDefinition {
  name: string;
  type: ParameterTypeName;
  required: boolean;
}

/** What a resource kind is. */
export interface ResourceDefinition {
  qualifiedName: string;
  name: string;
  parameters: ParameterDefinition[];
  /** Value seen: DATABASES. */
  group: string;
  experimental: boolean;
}

/** A skill: an external HTTP microservice registered by name and URL. */
export interface Skill {
  name: string;
  url: string;
  capability?: SkillCapabilityName;
  /** Entity extraction: NLP pipeline name (`default` selects the default pipeline). */
  pipeline?: string;
  /** Entity extraction: blank for `/annotate`, `v2` for `/v2/annotate`. */
  version?: string;
  /** Keyword extraction: extra parameters by name (annotatedText, iterations, damp, ...). */
  parameters?: Record<string, unknown>;
}

/** The schedule of a workflow: the contents of a `<workflow_name>_<uuid>.scheduler.json` file. */
export interface Schedule {
  enabled: boolean;
  /** Six-field cron expression, seconds first. */
  cron: string;
  /** IANA time zone, e.g. Europe/Berlin. */
  timezone: string;
  overlap: OverlapPolicyName;
  catchUp: CatchUpPolicyName;
}
