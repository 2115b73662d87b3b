// the error base and the JSON helpers live in @loom/foundation; they are re-exported so the domain's importers keep one import
export {
  type ErrorKind,
  type LoomErrorOptions,
  LoomError,
  type FieldViolation,
  ValidationError,
  NotFoundError,
  AlreadyExistsError,
  FailedPreconditionError,
  ConflictError,
  PermissionDeniedError,
  UnauthenticatedError,
  NotImplementedError,
  UnavailableError,
  ResourceExhaustedError,
  formatJsonPath,
  appendJsonPath,
  parseJsonText,
  findJsonSyntaxProblem,
  type JsonSyntaxProblem,
} from '@loom/foundation';
export * from './workflow.js';
export { type StoredName, parseStoredName, formatStoredName, newStoredName, workflowBaseName, resolveStoredName, checkWorkflowName } from './stored-name.js';
export { parseWithSchema } from './zod-violations.js';
export { parseWorkflowJson, parseWorkflow, serializeWorkflowJson, parseScheduleJson, parseSchedule, serializeScheduleJson } from './workflow-json.js';
export { workflowJsonSchema, scheduleJsonSchema, MAX_VALUE_DEPTH } from './workflow-schema.js';
export {
  readWorkflowTestText,
  type ReadWorkflowTests,
  type WorkflowTestCase,
  type WorkflowTestFile,
  workflowTestFileSchema,
  workflowTestJsonSchema,
  type WorkflowTestMatcher,
  type WorkflowTestSkillAnswers,
} from './workflow-test-file.js';
export { DERIVED_NAME_NAMESPACE, type DerivedNameKind, uuidV5, derivedUuid, derivedInstanceName, plainInstanceName, instanceNamed } from './derived-name.js';
export {
  COMPONENT_KIND_PREFIX,
  RESOURCE_KIND_PREFIX,
  LINK_ARROW,
  RESOURCE_NAME_OPTIONS,
  compactWorkflowSchema,
  type CompactWorkflow,
  type CompactComponent,
  type CompactResource,
  componentKindName,
  resourceKindName,
  shortKindName,
  workflowFromCompact,
} from './compact-workflow.js';
export { workflowToCompact } from './compact-from-full.js';
export { compactWorkflowJsonSchema } from './compact-schema.js';
export { DEFAULT_SKILL_NAMES, SCAFFOLD_GRAPH_RESOURCE, type ScaffoldRequest, scaffoldCompactWorkflow } from './compact-scaffold.js';
export { type WorkflowForm, type ReadWorkflow, readWorkflowText, parseCompactWorkflowText, serializeCompactWorkflow, compactText } from './compact-text.js';
export {
  SEALED_PREFIX,
  VARIABLE_NAME,
  secretReference,
  isSealed,
  forEachResourceParameter,
  type ResourceParameterVisitor,
  forEachSecretSlot,
  collectSecretSlots,
  type CollectedSecretSlots,
  type SecretSlotValue,
  needsSealing,
  readSecretBearingOption,
  type SecretBearingOptionContent,
  type SecretSlot,
  SECRET_BEARING_OPTIONS,
  SECRET_OPTIONS,
  secretBearingOptions,
} from './secret-values.js';
export { MESSAGE_TYPES, MESSAGE_FIELDS, type MessageFieldFlow, messageTypeAccepts } from './message-types.js';
export { linkLabel, type LinkViolationReason } from './workflow-links.js';
export {
  type VariableReferences,
  variableReferencesOf,
  type UnreferencedSecret,
  type WorkflowWithReferences,
  withVariableReferences,
  restoreVariableReferences,
  redactSecretValues,
  REDACTED_SECRET,
} from './variable-references.js';
export { type WorkflowGraph, type WorkflowGraphNode, type WorkflowGraphEdge, workflowGraph, shownComponentName } from './workflow-graph.js';
export {
  COMPONENT_KINDS,
  WEBHOOK_AUTHENTICATION,
  WEBHOOK_MIN_TIMESTAMP_TOLERANCE_MS,
  type ComponentKindName,
  RESOURCE_KINDS,
  type ResourceKindName,
  GRAPH_DATABASE_RESOURCE,
  SKILL_CAPABILITY_QUALIFIED_NAMES,
  componentCatalog,
  findComponentDefinition,
  componentInstance,
  catalogFor,
  resourceCatalog,
  findResourceDefinition,
  resourceSatisfies,
  isGraphSsoResource,
  optionConstraint,
  parameterConstraint,
  componentMessageFields,
} from './catalog.js';
export { type ValueConstraint } from './catalog-options.js';
export { unknownKindDescription, withCatalogDefinitions } from './catalog-definitions.js';
export { NATS_DELIVER_POLICIES, NATS_NON_JSON_HANDLING, NATS_SECRET_OPTIONS } from './nats-catalog.js';
export {
  type ComponentCatalog,
  validateWorkflow,
  type ValidateWorkflowOptions,
  MAX_WORKFLOW_BYTES,
  type WorkflowViolationReason,
} from './validate-workflow.js';
export {
  NO_ENTITY,
  ROOT_RELATION,
  type Annotation,
  type AnnotationSentence,
  type AnnotationToken,
  type AnnotationDependency,
  type AnnotationEntityMention,
} from './annotation.js';
export {
  SKILL_NAME,
  KEYWORD_EXTRACTION_PARAMETERS,
  annotationEndpoint,
  skillViolations,
  type AnnotationEndpoint,
  type SkillCheckOptions,
  type SkillViolationReason,
} from './skill.js';
export { entitiesOf, mergedEntitiesOf, isAnnotation, type EntityMention, type Entities, type MergedEntities } from './entities.js';
export {
  UNIVERSAL_POS_TAGS,
  MAX_RULES,
  MAX_PATH_STEPS,
  MAX_REPEAT,
  MAX_RULE_PATHS,
  MAX_PATH_HOPS,
  MAX_LISTS,
  MAX_LIST_WORDS,
  relationRulesSchema,
  relationRulesJsonSchema,
  relationRulesViolations,
  parseRelationRules,
  type RelationRuleSet,
  type RelationRule,
  type RelationRuleStep,
  type TokenConstraint,
  type DependentConstraint,
  type RuleWords,
} from './relation-rules.js';
export { expandRulePaths, resolveWords, stepBounds, relationsByType, rulePathsSize, type RuleHop, type StepShape } from './relation-rule-paths.js';
export { ANNOTATION_JSON_SCHEMA, ANNOTATION_SCHEMA, COMPLETE_ANNOTATION_SCHEMA, type CheckedAnnotation } from './annotation-schema.js';
