import { type Migration } from '@loom/postgres';

/** Schema of the skill registry. Tables are schema-qualified: later connections may put ag_catalog first on the search path. */
export const skillGatewayMigrations: readonly Migration[] = [
  {
    version: 1,
    name: 'skill_registration',
    sql: `
      CREATE TABLE public.skill_registration (
        name text PRIMARY KEY,
        capability text NOT NULL,
        url text NOT NULL,
        pipeline text NULL,
        version text NULL,
        parameters jsonb NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        updated_at timestamptz NOT NULL DEFAULT now(),
        CONSTRAINT skill_registration_capability_check
          CHECK (capability IN ('ENTITY_EXTRACTION', 'KEYWORD_EXTRACTION', 'WEB_DATA_EXTRACTION', 'PDF_PARSING'))
      )`,
  },
];
