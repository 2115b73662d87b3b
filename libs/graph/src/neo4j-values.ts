import type { Integer, Node, Relationship } from 'neo4j-driver';
import { neo4jDriver } from './neo4j-driver.js';
import { type GraphNode, type GraphParameters, type GraphRelationship, type GraphValue } from './graph-store.js';

/**
 * Converts a value read by neo4j-driver into plain data: Integers become numbers when safe and decimal strings
 * otherwise, nodes and relationships the shapes AGE returns too (ids are element ids), temporal values ISO text,
 * points `{ srid, x, y[, z] }` and byte arrays base64 text.
 */
export function fromNeo4j(value: unknown): GraphValue {
  if (value === null || value === undefined) return null;
  const { isInt, isNode, isRelationship, isPath, isPoint, isDate, isDateTime, isLocalDateTime, isLocalTime, isTime, isDuration } = neo4jDriver();
  if (typeof value === 'string' || typeof value === 'boolean' || typeof value === 'number') return value;
  if (typeof value === 'bigint') return Number.isSafeInteger(Number(value)) ? Number(value) : value.toString();
  if (isInt(value)) return integer(value);
  if (Array.isArray(value)) return value.map(fromNeo4j);
  if (isNode(value)) return node(value);
  if (isRelationship(value)) return relationship(value);
  if (isPath(value)) {
    return {
      nodes: [node(value.start), ...value.segments.map((segment) => node(segment.end))],
      relationships: value.segments.map((segment) => relationship(segment.relationship)),
    };
  }
  if (isPoint(value)) {
    const point = { srid: fromNeo4j(value.srid), x: value.x, y: value.y };
    return value.z === undefined ? point : { ...point, z: value.z };
  }
  if (isDate(value) || isDateTime(value) || isLocalDateTime(value) || isLocalTime(value) || isTime(value) || isDuration(value)) return value.toString();
  if (value instanceof Uint8Array) return Buffer.from(value).toString('base64');
  if (typeof value === 'object') return map(value as Record<string, unknown>);
  return null; // a function or symbol cannot come from the server
}

/**
 * Prepares parameters for neo4j-driver: whole numbers become Integers, because the driver would send every JS number
 * as a float (so `{id: 1}` would store 1.0 and `LIMIT $n` would fail), and JSON has no other way to say "integer".
 */
export function toNeo4jParameters(parameters: GraphParameters): Record<string, unknown> {
  return toNeo4jValue(parameters) as Record<string, unknown>;
}

function toNeo4jValue(value: unknown): unknown {
  if (typeof value === 'number') return Number.isSafeInteger(value) ? neo4jDriver().int(value) : value;
  if (Array.isArray(value)) return value.map(toNeo4jValue);
  if (value !== null && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    return Object.fromEntries(Object.entries(value).map(([key, entry]) => [key, toNeo4jValue(entry)]));
  }
  return value;
}

function integer(value: Integer): number | string {
  return value.inSafeRange() ? value.toNumber() : value.toString();
}

function map(value: Record<string, unknown>): { [key: string]: GraphValue } {
  const result: { [key: string]: GraphValue } = {};
  for (const [key, entry] of Object.entries(value)) {
    // defineProperty, so a key named __proto__ is a key and not the prototype
    Object.defineProperty(result, key, { value: fromNeo4j(entry), enumerable: true, writable: true, configurable: true });
  }
  return result;
}

function node(value: Node): GraphNode {
  return { id: value.elementId, labels: [...value.labels], properties: map(value.properties) };
}

function relationship(value: Relationship): GraphRelationship {
  return { id: value.elementId, type: value.type, start: value.startNodeElementId, end: value.endNodeElementId, properties: map(value.properties) };
}
