import { FailedPreconditionError, RESOURCE_KINDS, ValidationError } from '@loom/domain';
import { describe, expect, it } from 'vitest';
import { openGraphStore, type GraphResource } from '../src/index.js';
import { ageResource, neo4jResource } from './harness.js';

function refusal(resource: GraphResource): unknown {
  try {
    openGraphStore(resource);
  } catch (error) {
    return error;
  }
  throw new Error('openGraphStore accepted the resource');
}

describe('openGraphStore', () => {
  it('refuses the single sign-on graph kind as a failed precondition', () => {
    const error = refusal({ resource: { qualifiedName: RESOURCE_KINDS.GRAPH_SSO_DATABASE }, parameters: { url: 'neo4j://sso.example.com' } });
    expect(error).toBeInstanceOf(FailedPreconditionError);
    expect(error).toMatchObject({ kind: 'failed-precondition' });
    expect((error as Error).message).toContain('interactive use only');
  });

  it('refuses a kind that is not a graph database, naming the field', () => {
    const error = refusal({ resource: { qualifiedName: 'loom.resources.Something' }, parameters: {} });
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).violations[0]?.field).toBe('resource.qualifiedName');
  });

  it.each([
    [neo4jResource({ port: 70000 }), 'parameters.port', 'must be an integer 1..65535'],
    [neo4jResource({ port: '7687' }), 'parameters.port', 'must be an integer 1..65535'],
    [neo4jResource({ host: '' }), 'parameters.host', 'is required (a non-empty string)'],
    [
      neo4jResource({ host: 'http://graph.example.com' }),
      'parameters.host',
      'has the scheme http://; use one of bolt://, bolt+s://, bolt+ssc://, neo4j://, neo4j+s://, neo4j+ssc://',
    ],
    [
      neo4jResource({ host: 'bolt://neo4j:pw@graph.example.com' }),
      'parameters.host',
      'must not carry credentials; put them in parameters.user and parameters.password',
    ],
    [neo4jResource({ read_only: 'yes' }), 'parameters.read_only', 'must be a boolean (true or false)'],
    [neo4jResource({ user: 42 }), 'parameters.user', 'must be a string'],
    [
      ageResource({ host: 'db.example.com', port: 5432 }, { graph: 'kg' }),
      'parameters.graph',
      'must be an identifier of 3 to 63 characters (letters, digits, _; not starting with a digit)',
    ],
    [
      ageResource({ host: 'db.example.com', port: 5432 }, { graph: "kg'); DROP TABLE x; --" }),
      'parameters.graph',
      'must be an identifier of 3 to 63 characters (letters, digits, _; not starting with a digit)',
    ],
    [ageResource({ host: 'db.example.com', port: 0 }), 'parameters.port', 'must be an integer 1..65535'],
    [ageResource({ host: 'db/example', port: 5432 }), 'parameters.host', 'must be a host name or address (no spaces, /, @, ? or #)'],
  ])('names the bad parameter: %#', (resource, field, description) => {
    const error = refusal(resource);
    expect(error).toBeInstanceOf(ValidationError);
    expect((error as ValidationError).violations).toEqual([{ field, description }]);
    expect((error as Error).message).toBe(`${field}: ${description}`);
  });

  it('refuses a password that is still sealed, without echoing it', () => {
    const error = refusal(neo4jResource({ password: '###AES-c2VjcmV0LWNpcGhlcnRleHQ' }));
    expect(error).toBeInstanceOf(FailedPreconditionError);
    expect((error as Error).message).toContain('parameters.password is still sealed');
    expect((error as Error).message).not.toContain('c2VjcmV0');
  });

  it('opens the adapter of the kind, without connecting', async () => {
    const neo4j = openGraphStore(neo4jResource({ read_only: true }));
    const age = openGraphStore(ageResource({ host: 'db.example.com', port: 5432 }));
    expect([neo4j.kind, neo4j.readOnly, age.kind, age.readOnly]).toEqual(['neo4j', true, 'age', false]);
    await Promise.all([neo4j.close(), age.close()]);
  });
});
