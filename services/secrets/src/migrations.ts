import { type Migration } from '@loom/postgres';

/** Schema of the secrets service. Tables are schema-qualified: later connections put ag_catalog first on the search path. */
export const secretsMigrations: readonly Migration[] = [
  {
    version: 1,
    name: 'ecosystem_variable',
    sql: `
      CREATE TABLE public.ecosystem_variable (
        uuid uuid PRIMARY KEY,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        encrypted boolean NOT NULL,
        key text NOT NULL,
        value text NOT NULL,
        created_by_uuid uuid NOT NULL,
        last_updated_by_uuid uuid NULL,
        CONSTRAINT ecosystem_variable_key_unique UNIQUE (key)
      )`,
  },
];
