export { GRAPH_ONLY_PARAMETERS, keywordsSkill, optionsOf } from './keywords.skill.js';
export { DEFAULT_STOPWORDS, DEFAULT_TEXTRANK_OPTIONS, type Keyword, pageRank, textRank, type TextRankOptions } from './textrank.js';
