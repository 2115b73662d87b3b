export { annotationSkill, type AnnotationSkillOptions, type Annotator, createAnnotationSkill, nlpAnnotator } from './annotation.skill.js';
export { entitiesOf } from './entities.js';
export {
  DEFAULT_PIPELINE,
  type Pipeline,
  PipelineStore,
  SUPPORTED_ANNOTATORS,
  SUPPORTED_LANGUAGES,
  TECHNOLOGY_PIPELINE,
  TEXT_PROCESSORS,
} from './pipelines.js';
