import { UnavailableError } from '@loom/domain';
import { Neo4jError } from 'neo4j-driver';
import { describe, expect, it } from 'vitest';
import {
  GraphQueryError,
  GraphReadOnlyError,
  GraphTransientError,
  GraphUnavailableError,
  graphErrorFromNeo4j,
  graphErrorFromPg,
  isTransientGraphError,
  type GraphErrorContext,
} from './errors.js';

const age: GraphErrorContext = { store: 'age', address: 'db:5432/postgres graph kg', password: 'pa55-word', readOnly: true };
const neo4j: GraphErrorContext = { ...age, store: 'neo4j', address: 'bolt://db:7687' };

function pgError(code: string, message = `failure ${code}`): Error {
  return Object.assign(new Error(message), { code });
}

describe('graphErrorFromPg', () => {
  it.each([
    ['40001', GraphTransientError],
    ['40P01', GraphTransientError],
    ['55P03', GraphTransientError],
    ['57P01', GraphUnavailableError],
    ['57P03', GraphUnavailableError],
    ['08006', GraphUnavailableError],
    ['53300', GraphUnavailableError],
    ['ECONNRESET', GraphUnavailableError],
    ['ECONNREFUSED', GraphUnavailableError],
    ['ETIMEDOUT', GraphUnavailableError],
    ['EPIPE', GraphUnavailableError],
    ['42601', GraphQueryError],
    ['23505', GraphQueryError],
    ['3F000', GraphQueryError],
    ['25006', GraphReadOnlyError],
  ])('maps %s to %o', (code, type) => {
    const error = graphErrorFromPg(pgError(code), age);
    expect(error).toBeInstanceOf(type);
    expect(isTransientGraphError(error)).toBe(type === GraphTransientError || type === GraphUnavailableError);
    expect(isTransientGraphError(pgError(code))).toBe(type === GraphTransientError || type === GraphUnavailableError);
  });

  it('maps a connection pg ended without a code to unavailable', () => {
    expect(graphErrorFromPg(new Error('Connection terminated unexpectedly'), age)).toBeInstanceOf(GraphUnavailableError);
  });

  it('never repeats the password, raw or URL-encoded', () => {
    const error = graphErrorFromPg(pgError('28P01', 'password authentication failed for "pa55-word" (pa55-word)'), { ...age, password: 'pa55-word' });
    expect(error.message).toBe('query failed on age db:5432/postgres graph kg: password authentication failed for "***" (***)');
    const encoded = graphErrorFromPg(pgError('ECONNREFUSED', 'connect postgresql://u:p%40ss@db'), { ...age, password: 'p@ss' });
    expect(encoded.message).not.toContain('p%40ss');
  });

  it('passes LoomErrors through unchanged', () => {
    const own = new UnavailableError('already classified');
    expect(graphErrorFromPg(own, age)).toBe(own);
  });
});

describe('graphErrorFromNeo4j', () => {
  const neo4jError = (code: string) => new Neo4jError(`failure ${code}`, code, '50N42', 'description');

  it.each([
    ['Neo.TransientError.Transaction.DeadlockDetected', GraphTransientError],
    ['Neo.TransientError.General.DatabaseUnavailable', GraphTransientError],
    ['Neo.ClientError.Security.AuthorizationExpired', GraphTransientError],
    ['ServiceUnavailable', GraphUnavailableError],
    ['SessionExpired', GraphUnavailableError],
    ['Neo.ClientError.Statement.SyntaxError', GraphQueryError],
    ['Neo.ClientError.Schema.ConstraintValidationFailed', GraphQueryError],
    ['Neo.ClientError.Statement.AccessMode', GraphReadOnlyError],
  ])('maps %s to %o', (code, type) => {
    const error = graphErrorFromNeo4j(neo4jError(code), neo4j);
    expect(error).toBeInstanceOf(type);
    if (type !== GraphReadOnlyError) expect(error).toMatchObject({ code, store: 'neo4j' });
    expect(isTransientGraphError(error)).toBe(type === GraphTransientError || type === GraphUnavailableError);
  });

  it('leaves an error that is not the driver’s alone', () => {
    const bug = new TypeError('x is not a function');
    expect(graphErrorFromNeo4j(bug, neo4j)).toBe(bug);
    expect(isTransientGraphError(bug)).toBe(false);
  });

  it('finds a transient graph error in the cause chain', () => {
    const wrapped = new Error('batch failed', { cause: graphErrorFromNeo4j(neo4jError('ServiceUnavailable'), neo4j) });
    expect(isTransientGraphError(wrapped)).toBe(true);
  });
});
