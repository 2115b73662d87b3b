import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  findResourceDefinition,
  readWorkflowText,
  RESOURCE_KINDS,
  type ResourceDefinition,
  type ResourceInstance,
  serializeWorkflowJson,
  type WorkflowConfiguration,
} from '@loom/domain';
import { neo4jResourceParameters, type Neo4jTestServer } from '@loom/testing';

/** What the tests need of a Neo4j server started by `startNeo4j`. */
type Neo4jServer = Pick<Neo4jTestServer, 'uri' | 'user' | 'password'>;

/** A resource file for `loom graph query` naming the server. */
export function neo4jResourceFile(server: Neo4jServer): string {
  const file = join(mkdtempSync(join(tmpdir(), 'loom-neo4j-')), 'graph.json');
  writeFileSync(
    file,
    JSON.stringify({
      name: 'Neo4j_8b9c0d1e-2f3a-4b4c-9d5e-6f7a8b9c0d1e',
      resource: { qualifiedName: RESOURCE_KINDS.NEO4J_DATABASE },
      parameters: neo4jResourceParameters(server),
    }),
  );
  return file;
}

/**
 * A copy of a workflow file (either form) whose AGE graph resources (the workflow's and its components') are Neo4j
 * resources on the server, under another workflow name (`<name>_<uuid>`), written in the full form. Neo4j Community
 * has one database: every graph is that one.
 */
export function workflowOnNeo4j(file: string, server: Neo4jServer, name: string): string {
  const { workflow } = readWorkflowText(readFileSync(file, 'utf8'), file);
  const definition = findResourceDefinition(RESOURCE_KINDS.NEO4J_DATABASE) as ResourceDefinition;
  const onNeo4j = (instance: ResourceInstance): ResourceInstance =>
    instance.resource.qualifiedName === RESOURCE_KINDS.AGE_DATABASE
      ? { ...instance, resource: definition, parameters: neo4jResourceParameters(server) }
      : instance;
  const copy: WorkflowConfiguration = {
    ...workflow,
    name,
    resources: workflow.resources.map(onNeo4j),
    components: workflow.components.map((component) => ({ ...component, resource: component.resource == null ? null : onNeo4j(component.resource) })),
  };
  const target = join(mkdtempSync(join(tmpdir(), 'loom-neo4j-workflow-')), 'workflow.json');
  writeFileSync(target, serializeWorkflowJson(copy));
  return target;
}
