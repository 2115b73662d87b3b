import { type Row } from './annotations.js';

/**
 * The rule set of the relation tests and of examples/relations.workflow.yaml: a person works for or leads an
 * organisation, an organisation is based in a place, a person lives in a place. Each path is written from the subject
 * token to the object token.
 */
export const RULES = {
  rules: [
    {
      name: 'works-for',
      relation: 'WORKS_FOR',
      description: 'PERSON is the subject of (not negated) work, whose oblique introduced by for is an ORGANIZATION',
      subject: { entity: ['PERSON'] },
      path: [
        { relation: 'nsubj', direction: 'up', token: { lemma: ['work'], upos: ['VERB'], negated: false } },
        { relation: 'obl', direction: 'down' },
      ],
      object: { entity: ['ORGANIZATION'], token: { dependents: [{ relation: 'case', lemma: ['for', 'at'] }] } },
    },
    {
      name: 'leads',
      relation: 'LEADS',
      subject: { entity: ['PERSON'] },
      path: [
        { relation: 'nsubj', direction: 'up', token: { lemma: ['lead', 'head', 'run', 'direct', 'found'], upos: ['VERB'], negated: false } },
        { relation: 'obj', direction: 'down' },
      ],
      object: { entity: ['ORGANIZATION'] },
    },
    {
      name: 'based-in',
      relation: 'BASED_IN',
      subject: { entity: ['ORGANIZATION'] },
      path: [
        { relation: ['nsubj:pass', 'nsubj'], direction: 'up', token: { lemma: ['base', 'headquarter', 'locate'], negated: false } },
        { relation: 'obl', direction: 'down' },
      ],
      object: { entity: ['LOCATION'], token: { dependents: [{ relation: 'case', lemma: ['in'] }] } },
    },
    {
      name: 'lives-in',
      relation: 'LIVES_IN',
      subject: { entity: ['PERSON'] },
      path: [
        { relation: 'nsubj', direction: 'up', token: { lemma: ['live', 'reside'], negated: false } },
        { relation: 'obl', direction: 'down' },
      ],
      object: { entity: ['LOCATION'], token: { dependents: [{ relation: 'case', lemma: ['in'] }] } },
    },
    {
      name: 'does-not-work-for',
      relation: 'DOES_NOT_WORK_FOR',
      description: 'the negated counterpart of works-for',
      subject: { entity: ['PERSON'] },
      path: [
        { relation: 'nsubj', direction: 'up', token: { lemma: ['work'], negated: true } },
        { relation: 'obl', direction: 'down' },
      ],
      object: { entity: ['ORGANIZATION'] },
    },
  ],
};

const P = 'PERSON';
const O = 'ORGANIZATION';
const L = 'LOCATION';

/** "Ada Lovelace works for Analytical Engines ." — WORKS_FOR(Ada Lovelace, Analytical Engines). */
export const WORKS_FOR: Row[] = [
  ['Ada', 'Ada', 'NNP', 'PROPN', 3, 'nsubj', P],
  ['Lovelace', 'Lovelace', 'NNP', 'PROPN', 1, 'flat', P],
  ['works', 'work', 'VBZ', 'VERB', 0, 'root'],
  ['for', 'for', 'IN', 'ADP', 6, 'case'],
  ['Analytical', 'Analytical', 'NNP', 'PROPN', 6, 'compound', O],
  ['Engines', 'Engines', 'NNPS', 'PROPN', 3, 'obl', O],
  ['.', '.', '.', 'PUNCT', 3, 'punct'],
];

/** "Charles Babbage does not work for Analytical Engines ." — negated: no WORKS_FOR, but DOES_NOT_WORK_FOR. */
export const NEGATED: Row[] = [
  ['Charles', 'Charles', 'NNP', 'PROPN', 5, 'nsubj', P],
  ['Babbage', 'Babbage', 'NNP', 'PROPN', 1, 'flat', P],
  ['does', 'do', 'VBZ', 'AUX', 5, 'aux'],
  ['not', 'not', 'RB', 'PART', 5, 'advmod'],
  ['work', 'work', 'VB', 'VERB', 0, 'root'],
  ['for', 'for', 'IN', 'ADP', 8, 'case'],
  ['Analytical', 'Analytical', 'NNP', 'PROPN', 8, 'compound', O],
  ['Engines', 'Engines', 'NNPS', 'PROPN', 5, 'obl', O],
  ['.', '.', '.', 'PUNCT', 5, 'punct'],
];

/** "Grace Hopper leads the Navy Lab ." — LEADS(Grace Hopper, Navy Lab). */
export const LEADS: Row[] = [
  ['Grace', 'Grace', 'NNP', 'PROPN', 3, 'nsubj', P],
  ['Hopper', 'Hopper', 'NNP', 'PROPN', 1, 'flat', P],
  ['leads', 'lead', 'VBZ', 'VERB', 0, 'root'],
  ['the', 'the', 'DT', 'DET', 6, 'det'],
  ['Navy', 'Navy', 'NNP', 'PROPN', 6, 'compound', O],
  ['Lab', 'Lab', 'NNP', 'PROPN', 3, 'obj', O],
  ['.', '.', '.', 'PUNCT', 3, 'punct'],
];

/** "Analytical Engines is based in London ." — BASED_IN(Analytical Engines, London). */
export const BASED_IN: Row[] = [
  ['Analytical', 'Analytical', 'NNP', 'PROPN', 2, 'compound', O],
  ['Engines', 'Engines', 'NNPS', 'PROPN', 4, 'nsubj:pass', O],
  ['is', 'be', 'VBZ', 'AUX', 4, 'aux:pass'],
  ['based', 'base', 'VBN', 'VERB', 0, 'root'],
  ['in', 'in', 'IN', 'ADP', 6, 'case'],
  ['London', 'London', 'NNP', 'PROPN', 4, 'obl', L],
  ['.', '.', '.', 'PUNCT', 4, 'punct'],
];

/** "Ada Lovelace lives in London with Charles Babbage ." — LIVES_IN(Ada Lovelace, London) only: Babbage's oblique has `with`, not `in`. */
export const LIVES_IN: Row[] = [
  ['Ada', 'Ada', 'NNP', 'PROPN', 3, 'nsubj', P],
  ['Lovelace', 'Lovelace', 'NNP', 'PROPN', 1, 'flat', P],
  ['lives', 'live', 'VBZ', 'VERB', 0, 'root'],
  ['in', 'in', 'IN', 'ADP', 5, 'case'],
  ['London', 'London', 'NNP', 'PROPN', 3, 'obl', L],
  ['with', 'with', 'IN', 'ADP', 7, 'case'],
  ['Charles', 'Charles', 'NNP', 'PROPN', 3, 'obl', P],
  ['Babbage', 'Babbage', 'NNP', 'PROPN', 7, 'flat', P],
  ['.', '.', '.', 'PUNCT', 3, 'punct'],
];

/** "Alan Turing works hard ." then "The lab at Bletchley Park hired him ." — two sentences, no relation. */
export const TURING: Row[] = [
  ['Alan', 'Alan', 'NNP', 'PROPN', 3, 'nsubj', P],
  ['Turing', 'Turing', 'NNP', 'PROPN', 1, 'flat', P],
  ['works', 'work', 'VBZ', 'VERB', 0, 'root'],
  ['hard', 'hard', 'RB', 'ADV', 3, 'advmod'],
  ['.', '.', '.', 'PUNCT', 3, 'punct'],
];
export const BLETCHLEY: Row[] = [
  ['The', 'the', 'DT', 'DET', 2, 'det'],
  ['lab', 'lab', 'NN', 'NOUN', 6, 'nsubj'],
  ['at', 'at', 'IN', 'ADP', 5, 'case'],
  ['Bletchley', 'Bletchley', 'NNP', 'PROPN', 5, 'compound', O],
  ['Park', 'Park', 'NNP', 'PROPN', 2, 'nmod', O],
  ['hired', 'hire', 'VBD', 'VERB', 0, 'root'],
  ['him', 'he', 'PRP', 'PRON', 6, 'obj'],
  ['.', '.', '.', 'PUNCT', 6, 'punct'],
];
