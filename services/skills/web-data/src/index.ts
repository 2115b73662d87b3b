export { extractArticle, frequentTerms, type WebData } from './article.js';
export { parseDate } from './article-metadata.js';
export { webDataSkill } from './web-data.skill.js';
