import { appendJsonPath, type FieldViolation, ValidationError } from '@loom/foundation';
import {
  COMPONENT_KINDS,
  frozenComponentDefinition,
  frozenResourceDefinition,
  GRAPH_DATABASE_RESOURCE,
  isGraphSsoResource,
  optionConstraint,
  parameterConstraint,
  resourceSatisfies,
  SKILL_CAPABILITY_QUALIFIED_NAMES,
  WEBHOOK_MIN_TIMESTAMP_TOLERANCE_MS,
} from './catalog.js';
import {
  componentDefinitionViolations,
  componentKindNames,
  resourceDefinitionViolations,
  resourceKindNames,
  unknownKindDescription,
} from './catalog-definitions.js';
import { type ValueConstraint } from './catalog-options.js';
import { natsOptionViolations } from './nats-option-checks.js';
import { relationRulesViolations } from './relation-rules.js';
import { isSealed, readSecretBearingOption, SECRET_BEARING_OPTIONS, secretReference } from './secret-values.js';
import { skillViolations } from './skill.js';
import { linkViolations, type LinkViolationReason } from './workflow-links.js';
import type {
  ComponentDefinition,
  ComponentInstance,
  OptionDefinition,
  OptionTypeName,
  ParameterTypeName,
  ResourceDefinition,
  ResourceInstance,
  SkillCapabilityName,
  WorkflowConfiguration,
} from './workflow.js';

/** Largest serialized `.workflow.json` loom accepts, in bytes; the config store checks it on the text. */
export const MAX_WORKFLOW_BYTES = 4 * 1024 * 1024;

/** Reason codes of the violations validateWorkflow reports. */
export type WorkflowViolationReason =
  | 'UNKNOWN_COMPONENT'
  | 'DUPLICATE_NAME'
  | 'SELF_LINK'
  | 'DUPLICATE_LINK'
  | 'MISSING_OPTION'
  | 'UNKNOWN_OPTION'
  | 'WRONG_TYPE'
  | 'UNKNOWN_FAILURE_HANDLER'
  | 'SSO_RESOURCE_NOT_ALLOWED'
  | 'MISSING_RESOURCE'
  | 'WRONG_RESOURCE_TYPE'
  | 'UNKNOWN_RESOURCE'
  | 'MISSING_PARAMETER'
  | 'UNKNOWN_PARAMETER'
  | 'INVALID_VALUE'
  | 'MISSING_SKILL'
  | 'WRONG_SKILL_CAPABILITY'
  | 'UNREADABLE_SECRET_OPTION'
  | 'INVALID_SKILL'
  | 'DEFINITION_MISMATCH'
  | LinkViolationReason;

/**
 * Checks a workflow against the catalog: component kinds, options and their types, links and
 * what they join (workflow-links.ts), failure handlers, resources and their parameters, skills. Throws one ValidationError with
 * every violation (field: JSON path, reason: a WorkflowViolationReason); descriptions name
 * fields, never values (but a kind's name, repeated with a suggestion when it is unknown). The definitions copied into
 * the workflow decide nothing, the catalog does: a copy may leave fields empty, but one that contradicts the catalog
 * (another type, name or resource) is a DEFINITION_MISMATCH (catalog-definitions.ts).
 */
export function validateWorkflow(workflow: WorkflowConfiguration, options: ValidateWorkflowOptions = {}): void {
  const definitionOf = options.componentDefinition ?? frozenComponentDefinition;
  const check = new Check(workflow, definitionOf);
  workflow.components.forEach((component, i) => check.component(component, `components[${i}]`));
  check.links();
  for (const violation of linkViolations(workflow, definitionOf)) check.report(violation.field, violation.description, violation.reason);
  workflow.resources.forEach((resource, i) => check.resource(resource, `resources[${i}]`));
  workflow.workflowResources.forEach((resource, i) => check.resource(resource, `workflowResources[${i}]`));
  if (check.violations.length > 0) throw new ValidationError(check.violations);
}

const OPTION_TYPE_DESCRIPTIONS: Record<OptionTypeName, string> = {
  BOOLEAN: 'BOOLEAN (true or false)',
  INTEGER: 'INTEGER (a whole number)',
  NUMBER: 'NUMBER (a finite number)',
  STRING: 'STRING (a string)',
  TEXT: 'TEXT (a string)',
  SCRIPT: 'SCRIPT (a string)',
  JSON: 'JSON (any JSON value)',
  COMPONENT_SELECTION_FAILURE_HANDLER: 'COMPONENT_SELECTION_FAILURE_HANDLER (a component name or null)',
};

const PARAMETER_TYPE_DESCRIPTIONS: Record<ParameterTypeName, string> = {
  STRING: 'STRING (a string)',
  INTEGER: 'INTEGER (a whole number)',
  BOOLEAN: 'BOOLEAN (true or false)',
  PASSWORD: 'PASSWORD (a string)',
};

/** The definition of a component kind by its qualified name, undefined for a kind it does not know. */
export type ComponentCatalog = (qualifiedName: string) => Readonly<ComponentDefinition> | undefined;

/** Options of validateWorkflow. */
export interface ValidateWorkflowOptions {
  /** The component kinds a workflow may use; default loom's catalog (tests add kinds of their own). */
  readonly componentDefinition?: ComponentCatalog;
}

/** The violations found so far, and what the checks of one workflow share. */
class Check {
  readonly violations: FieldViolation[] = [];
  /** Names of all components, for links and failure handlers (which may name a later component). */
  private readonly componentNames: ReadonlySet<string>;
  private readonly seenComponentNames = new Set<string>();

  constructor(
    private readonly workflow: WorkflowConfiguration,
    private readonly componentDefinition: ComponentCatalog,
  ) {
    this.componentNames = new Set(workflow.components.map((component) => component.name));
  }

  report(field: string, description: string, reason: WorkflowViolationReason): void {
    this.violations.push({ field, description, reason });
  }

  component(component: ComponentInstance, path: string): void {
    if (this.seenComponentNames.has(component.name)) {
      this.report(appendJsonPath(path, 'name'), `another component is named '${component.name}' already`, 'DUPLICATE_NAME');
    }
    this.seenComponentNames.add(component.name);
    const definition = this.componentDefinition(component.component.qualifiedName);
    if (definition === undefined) {
      const description = unknownKindDescription('component', component.component.qualifiedName, componentKindNames());
      this.report(appendJsonPath(appendJsonPath(path, 'component'), 'qualifiedName'), description, 'UNKNOWN_COMPONENT');
      if (component.resource != null) this.resource(component.resource, appendJsonPath(path, 'resource'));
      return;
    }
    for (const violation of componentDefinitionViolations(component, definition, path)) this.violations.push(violation);
    this.options(component, definition, path);
    if (definition.qualifiedName === COMPONENT_KINDS.WEBHOOK) this.webhookAuthentication(component, appendJsonPath(path, 'options'));
    for (const violation of natsOptionViolations(component, appendJsonPath(path, 'options')))
      this.report(violation.field, violation.description, violation.reason);
    this.componentResource(component, definition, appendJsonPath(path, 'resource'));
    this.skill(component, definition, appendJsonPath(path, 'skill'));
  }

  private options(component: ComponentInstance, definition: ComponentDefinition, path: string): void {
    const definitions = new Map(definition.options.map((option) => [option.name, option]));
    const given = new Set<string>();
    const optionsPath = appendJsonPath(path, 'options');
    component.options.forEach((option, j) => {
      const optionPath = appendJsonPath(optionsPath, j);
      const optionDefinition = definitions.get(option.name);
      if (optionDefinition === undefined) {
        this.report(appendJsonPath(optionPath, 'name'), `${definition.name} has no option '${option.name}'`, 'UNKNOWN_OPTION');
      } else if (given.has(option.name)) {
        this.report(appendJsonPath(optionPath, 'name'), `option '${option.name}' is given more than once`, 'DUPLICATE_NAME');
      } else {
        given.add(option.name);
        this.optionValue(component, definition, optionDefinition, option.value, appendJsonPath(optionPath, 'value'));
      }
    });
    for (const option of definition.options) {
      if (option.required && !given.has(option.name) && option.defaultValue == null) {
        this.report(optionsPath, `option '${option.name}' (${option.label}) is required`, 'MISSING_OPTION');
      }
    }
  }

  private optionValue(component: ComponentInstance, definition: ComponentDefinition, option: OptionDefinition, value: unknown, path: string): void {
    if (value === null && !option.required) return;
    if (value === null || !hasOptionType(option.type, value)) {
      const nullNote = value === null ? ' (it is required, so not null)' : '';
      this.report(path, `option '${option.name}' must be of type ${OPTION_TYPE_DESCRIPTIONS[option.type]}${nullNote}`, 'WRONG_TYPE');
      return;
    }
    if (option.required && isBlank(value)) {
      this.report(path, `option '${option.name}' (${option.label}) is required and must not be empty`, 'MISSING_OPTION');
      return;
    }
    if (SECRET_BEARING_OPTIONS[definition.qualifiedName]?.includes(option.name) === true) {
      // sealing must find every header value, or a credential would be stored in clear
      const content = readSecretBearingOption(value);
      if (!content.ok) this.report(path, `option '${option.name}' ${content.description}`, 'UNREADABLE_SECRET_OPTION');
    }
    if (definition.qualifiedName === COMPONENT_KINDS.RULE_BASED_RELATION_EXTRACTION) {
      // the rule language has its own schema (schema/relation-rules.schema.json); its violations name paths inside the value
      if (option.name === 'rules')
        for (const violation of relationRulesViolations(value, path)) this.report(violation.field, violation.description, 'INVALID_VALUE');
      if (option.name === 'target_resource' && typeof value === 'string' && !this.isGraphResourceName(value)) {
        this.report(path, `option '${option.name}' must name a graph database resource of this workflow (resources or workflowResources)`, 'UNKNOWN_RESOURCE');
      }
      if (option.name === 'rules') return;
    }
    if (typeof value !== 'string') return;
    const constraint = optionConstraint(definition.qualifiedName, option.name);
    const allowedValues = constraint?.allowedValues;
    if (allowedValues !== undefined && !allowedValues.includes(value)) {
      this.report(path, `option '${option.name}' must be one of: ${allowedValues.join(', ')}`, 'WRONG_TYPE');
    }
    // a $$VARIABLE stands for a value the pattern cannot see
    if (secretReference(value) === undefined && !isSealed(value)) this.constraint(constraint, value, path, `option '${option.name}'`);
    if (option.type === 'COMPONENT_SELECTION_FAILURE_HANDLER' && (value === component.name || !this.componentNames.has(value))) {
      this.report(path, `option '${option.name}' must name another component of this workflow`, 'UNKNOWN_FAILURE_HANDLER');
    }
  }

  /**
   * A webhook's `secret` goes with `authentication: hmac` and only with it, and is a `$$VARIABLE` (sealed at push),
   * never the secret itself in the workflow. The mode's own values are checked by its allowedValues.
   */
  private webhookAuthentication(component: ComponentInstance, optionsPath: string): void {
    const mode = component.options.find((option) => option.name === 'authentication')?.value ?? 'bearer';
    const toleranceIndex = component.options.findIndex((option) => option.name === 'timestamp_tolerance');
    const tolerance = component.options[toleranceIndex]?.value;
    if (typeof tolerance === 'number' && tolerance < WEBHOOK_MIN_TIMESTAMP_TOLERANCE_MS) {
      const tolerancePath = appendJsonPath(appendJsonPath(optionsPath, toleranceIndex), 'value');
      this.report(tolerancePath, `option 'timestamp_tolerance' must be at least ${WEBHOOK_MIN_TIMESTAMP_TOLERANCE_MS} (ms)`, 'INVALID_VALUE');
    }
    const secretIndex = component.options.findIndex((option) => option.name === 'secret');
    const secret = component.options[secretIndex]?.value;
    const given = typeof secret === 'string' && !isBlank(secret);
    if (mode === 'hmac' && !given) {
      this.report(
        optionsPath,
        "option 'secret' is required when authentication is hmac: a $$VARIABLE naming the variable that holds the shared secret",
        'MISSING_OPTION',
      );
      return;
    }
    if (!given) return;
    const secretPath = appendJsonPath(appendJsonPath(optionsPath, secretIndex), 'value');
    if (mode !== 'hmac') this.report(secretPath, "option 'secret' is used only when authentication is hmac", 'INVALID_VALUE');
    else if (secretReference(secret) === undefined && !isSealed(secret)) {
      this.report(secretPath, "option 'secret' must be a $$VARIABLE naming the variable that holds the shared secret, not the secret itself", 'INVALID_VALUE');
    }
  }

  private isGraphResourceName(name: string): boolean {
    return [...this.workflow.resources, ...this.workflow.workflowResources].some(
      (resource) => resource.name === name && resourceSatisfies(GRAPH_DATABASE_RESOURCE, resource.resource.qualifiedName),
    );
  }

  private componentResource(component: ComponentInstance, definition: ComponentDefinition, path: string): void {
    if (component.resource == null) {
      if (definition.resource !== null) this.report(path, `${definition.name} needs a resource of type ${definition.resource}`, 'MISSING_RESOURCE');
      return;
    }
    const resourceDefinition = this.resource(component.resource, path);
    if (resourceDefinition !== undefined && definition.resource !== null && !resourceSatisfies(definition.resource, resourceDefinition.qualifiedName)) {
      this.report(path, `${definition.name} needs a resource of type ${definition.resource}, not ${resourceDefinition.name}`, 'WRONG_RESOURCE_TYPE');
    }
  }

  private skill(component: ComponentInstance, definition: ComponentDefinition, path: string): void {
    if (definition.capabilityQualifiedName === null) return;
    const { skill } = component;
    if (skill === null) {
      this.report(path, `${definition.name} calls a skill: give it one, by name (a registered skill) or with name and url`, 'MISSING_SKILL');
      return;
    }
    const capability = capabilityOf(definition);
    if (capability === undefined) return;
    for (const violation of skillViolations(skill, capability, path, { allowNameOnly: true })) {
      const reason =
        violation.field === appendJsonPath(path, 'capability')
          ? 'WRONG_SKILL_CAPABILITY'
          : violation.reason === 'MISSING_FIELD'
            ? 'MISSING_SKILL'
            : 'INVALID_SKILL';
      const description = reason === 'WRONG_SKILL_CAPABILITY' ? `${definition.name} needs a skill of capability ${capability}` : violation.description;
      this.report(violation.field, `${component.name}: ${description}`, reason);
    }
  }

  links(): void {
    const seen = new Set<string>();
    this.workflow.links.forEach((link, k) => {
      const path = `links[${k}]`;
      const fromKnown = this.componentNames.has(link.from);
      const toKnown = this.componentNames.has(link.to);
      if (!fromKnown) this.report(appendJsonPath(path, 'from'), 'names no component of this workflow', 'UNKNOWN_COMPONENT');
      if (!toKnown) this.report(appendJsonPath(path, 'to'), 'names no component of this workflow', 'UNKNOWN_COMPONENT');
      if (fromKnown && link.from === link.to) this.report(appendJsonPath(path, 'to'), 'a component cannot be linked to itself', 'SELF_LINK');
      // component names are free text, so the pair is keyed by JSON rather than by joining with a separator
      const key = JSON.stringify([link.from, link.to]);
      if (seen.has(key)) this.report(path, 'the same link is given more than once', 'DUPLICATE_LINK');
      seen.add(key);
    });
  }

  /** Checks one resource instance; returns its catalog definition when it is known and allowed. */
  resource(resource: ResourceInstance, path: string): ResourceDefinition | undefined {
    const kindPath = appendJsonPath(appendJsonPath(path, 'resource'), 'qualifiedName');
    if (isGraphSsoResource(resource)) {
      this.report(kindPath, 'the single sign-on graph database is for interactive use only, never in a workflow', 'SSO_RESOURCE_NOT_ALLOWED');
      return undefined;
    }
    const definition = frozenResourceDefinition(resource.resource.qualifiedName);
    if (definition === undefined) {
      this.report(kindPath, unknownKindDescription('resource', resource.resource.qualifiedName, resourceKindNames()), 'UNKNOWN_RESOURCE');
      return undefined;
    }
    for (const violation of resourceDefinitionViolations(resource, definition, path)) this.violations.push(violation);
    this.parameters(resource.parameters, definition, appendJsonPath(path, 'parameters'));
    return definition;
  }

  private parameters(parameters: Record<string, unknown>, definition: ResourceDefinition, path: string): void {
    const definitions = new Map(definition.parameters.map((parameter) => [parameter.name, parameter]));
    for (const [name, value] of Object.entries(parameters)) {
      const parameter = definitions.get(name);
      const parameterPath = appendJsonPath(path, name);
      if (parameter === undefined) {
        this.report(parameterPath, `${definition.name} has no parameter '${name}'`, 'UNKNOWN_PARAMETER');
      } else if (value === null || secretReference(value) !== undefined || isSealed(value)) {
        // null is "not given" (a required one is reported below); a variable or a sealed value stands for any type
      } else if (!hasParameterType(parameter.type, value)) {
        this.report(parameterPath, `parameter '${name}' must be of type ${PARAMETER_TYPE_DESCRIPTIONS[parameter.type]}`, 'WRONG_TYPE');
      } else {
        this.constraint(parameterConstraint(definition.qualifiedName, name), value, parameterPath, `parameter '${name}'`);
      }
    }
    for (const parameter of definition.parameters) {
      if (parameter.required && (!Object.hasOwn(parameters, parameter.name) || isBlank(parameters[parameter.name]))) {
        this.report(path, `parameter '${parameter.name}' is required`, 'MISSING_PARAMETER');
      }
    }
  }

  private constraint(constraint: ValueConstraint | undefined, value: unknown, path: string, what: string): void {
    if (constraint?.minLength !== undefined && typeof value === 'string' && value.length < constraint.minLength) {
      this.report(path, `${what} must be at least ${constraint.minLength} characters long`, 'INVALID_VALUE');
    } else if (constraint?.pattern !== undefined && typeof value === 'string' && !constraint.pattern.regex.test(value)) {
      this.report(path, `${what} must be ${constraint.pattern.description}`, 'INVALID_VALUE');
    }
  }
}

function hasOptionType(type: OptionTypeName, value: unknown): boolean {
  switch (type) {
    case 'BOOLEAN':
      return typeof value === 'boolean';
    case 'INTEGER':
      return Number.isSafeInteger(value);
    case 'NUMBER':
      return typeof value === 'number' && Number.isFinite(value);
    case 'STRING':
    case 'TEXT':
    case 'SCRIPT':
      return typeof value === 'string';
    case 'JSON':
      return isJsonValue(value);
    case 'COMPONENT_SELECTION_FAILURE_HANDLER':
      return value === null || typeof value === 'string';
  }
}

function hasParameterType(type: ParameterTypeName, value: unknown): boolean {
  switch (type) {
    case 'STRING':
    case 'PASSWORD':
      return typeof value === 'string';
    case 'INTEGER':
      return Number.isSafeInteger(value);
    case 'BOOLEAN':
      return typeof value === 'boolean';
  }
}

/** Whether a value is what JSON can hold: workflows built in code can carry undefined, NaN or class instances. */
function isJsonValue(value: unknown): boolean {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return true;
  if (typeof value === 'number') return Number.isFinite(value);
  if (Array.isArray(value)) return value.every(isJsonValue);
  if (typeof value !== 'object') return false;
  const prototype: unknown = Object.getPrototypeOf(value);
  return (prototype === Object.prototype || prototype === null) && Object.values(value).every(isJsonValue);
}

function isBlank(value: unknown): boolean {
  return value === undefined || value === null || (typeof value === 'string' && value.trim() === '');
}

/** The capability a skill component kind calls, from its capabilityQualifiedName. */
function capabilityOf(definition: ComponentDefinition): SkillCapabilityName | undefined {
  const entry = Object.entries(SKILL_CAPABILITY_QUALIFIED_NAMES).find(([, qualifiedName]) => qualifiedName === definition.capabilityQualifiedName);
  return entry?.[0] as SkillCapabilityName | undefined;
}
