import { describe, expect, it } from 'vitest';
import { NlpPipeline } from '@loom/nlp';

// Constructed sentences (issue 54, Must 1): names the committed models must find whole. Written for this test, no
// corpus text; one pipeline for the file, loaded once.
const pipeline = new NlpPipeline();

/** The entity mentions of a text as `[text]TYPE`. */
function mentions(text: string): string[] {
  return pipeline
    .annotate(text, { annotators: 'tokenize,ssplit,pos,ner' })
    .sentences.flatMap((sentence) => (sentence.entitymentions ?? []).map((mention) => `[${mention.text}]${mention.ner}`));
}

describe('whole names with the committed models', () => {
  it.each([
    ['Catherine Zeta-Jones married Michael Douglas in New York.', ['[Catherine Zeta-Jones]PERSON', '[Michael Douglas]PERSON', '[New York]LOCATION']],
    ['Yesterday Mary-Kate Olsen met Jean-Paul Sartre in Paris.', ['[Mary-Kate Olsen]PERSON', '[Jean-Paul Sartre]PERSON', '[Paris]LOCATION']],
    ['The actor Daniel Day-Lewis won again.', ['[Daniel Day-Lewis]PERSON']],
    ['Jean-Claude Juncker led the European Commission.', ['[Jean-Claude Juncker]PERSON', '[European Commission]ORGANIZATION']],
    ['We met Hans-Peter Müller in Munich.', ['[Hans-Peter Müller]PERSON', '[Munich]LOCATION']],
    [
      'Shaikh Abdul Wahhab al-Janabi of the Association of Muslim Scholars was killed.',
      ['[Shaikh Abdul Wahhab al-Janabi]PERSON', '[Association of Muslim Scholars]ORGANIZATION'],
    ],
  ])('hyphenated: %s', (text, expected) => {
    expect(mentions(text)).toEqual(expected);
  });

  it.each([
    ['John F. Kennedy was elected in 1960.', ['[John F. Kennedy]PERSON']],
    ['George W. Bush spoke on Monday.', ['[George W. Bush]PERSON']],
    ['J. R. R. Tolkien wrote many books.', ['[J. R. R. Tolkien]PERSON']],
    ['Anna Maria Schmidt works for Siemens in Munich.', ['[Anna Maria Schmidt]PERSON', '[Siemens]ORGANIZATION', '[Munich]LOCATION']],
    ['Sarah Jessica Parker and Mary Ann Evans arrived.', ['[Sarah Jessica Parker]PERSON', '[Mary Ann Evans]PERSON']],
  ])('initials and two-part given names: %s', (text, expected) => {
    expect(mentions(text)).toEqual(expected);
  });

  it.each([
    ['He joined the Bank of England in 1990.', ['[Bank of England]ORGANIZATION']],
    ['The report by the Ministry of Defence was late.', ['[Ministry of Defence]ORGANIZATION']],
    ['She works at NASA and the FBI now.', ['[NASA]ORGANIZATION', '[FBI]ORGANIZATION']],
    ['The report came from IBM and the UN.', ['[IBM]ORGANIZATION', '[UN]ORGANIZATION']],
    ['George W. Bush spoke at the Council on Foreign Relations on Monday.', ['[George W. Bush]PERSON', '[Council on Foreign Relations]ORGANIZATION']],
    ['The complaint against the Housing Authority of New Orleans was filed.', ['[Housing Authority of New Orleans]ORGANIZATION']],
    ['The National Association of Realtors disagreed.', ['[National Association of Realtors]ORGANIZATION']],
    ['The Sept. 11 Commission met again.', ['[Sept. 11 Commission]ORGANIZATION']],
    ['They sued the Housing Authority of New Orleans (HANO) last week.', ['[Housing Authority of New Orleans]ORGANIZATION', '[HANO]ORGANIZATION']],
  ])('"the X of Y" organisations and acronyms: %s', (text, expected) => {
    expect(mentions(text)).toEqual(expected);
  });

  it.each([
    ['Thanks to Constellation Power Source, Inc. for the offer.', ['[Constellation Power Source, Inc.]ORGANIZATION']],
    ['She joined Acme Rocket Systems last year.', ['[Acme Rocket Systems]ORGANIZATION']],
    ['He works for Brightwave Technologies in Austin.', ['[Brightwave Technologies]ORGANIZATION', '[Austin]LOCATION']],
    ['Kelly Cloud, Senior Vice President of CCNG, Inc. called.', ['[Kelly Cloud]PERSON', '[CCNG, Inc.]ORGANIZATION']],
  ])('organisations by their suffix or head (Must 2): %s', (text, expected) => {
    expect(mentions(text)).toEqual(expected);
  });

  it('leaves a hyphen with spaces around it, and two places joined by one, as separate entities', () => {
    expect(mentions('Brandon Luna - Analyst')).not.toContain('[Brandon Luna - Analyst]PERSON');
    expect(mentions('The Iran-Iraq war ended in 1988.')).not.toContain('[Iran-Iraq]LOCATION');
  });

  it.each([
    [
      'They sued the Housing Authority of New Orleans (HANO) last week. HANO has not replied.',
      ['[Housing Authority of New Orleans]ORGANIZATION', '[HANO]ORGANIZATION', '[HANO]ORGANIZATION'],
    ],
    ['Margaret Thornbury wrote to us. Thornbury said the plan was late.', ['[Margaret Thornbury]PERSON', '[Thornbury]PERSON']],
  ])('a name found once keeps its type at its other mentions in the text, a surname alone too (Must 2): %s', (text, expected) => {
    expect(mentions(text)).toEqual(expected);
  });
});
