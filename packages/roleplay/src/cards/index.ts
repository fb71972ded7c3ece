export {
  characterCardLimitsSchema,
  characterCardV2Schema,
  characterCardV3Schema,
  characterCardVersionSchema,
  createCharacterCardSchemas,
  type CharacterCard,
  type CharacterCardLimits,
  type CharacterCardV2,
  type CharacterCardV3,
  type CharacterCardVersion,
} from './character-card.js'
export {
  cardRemainderSchema,
  characterRelationSchema,
  characterSchema,
  defaultCharacterId,
  ludicCardExtensionSchema,
  type CardRemainder,
  type Character,
  type CharacterInput,
  type CharacterRelation,
} from './character.js'
export {
  exportCharacterCard,
  importCharacterCard,
  type ExportCharacterCardOptions,
  type ImportCharacterCardOptions,
} from './import-character-card.js'
export { personaSchema, type Persona } from './persona.js'
export {
  characterPromptOptionsSchema,
  renderCharacterPrompt,
  replaceCardPlaceholders,
  replacedCardPlaceholdersLength,
  type CharacterPromptOptions,
} from './character-prompt.js'
export { personaPromptOptionsSchema, renderPersonaPrompt, type PersonaPromptOptions } from './persona-prompt.js'
export { loadCharacters, loadPersonas, shippedCharacterIds } from './shipped-data.js'
export { rubricInputSchema, rubricSchema, type Rubric, type RubricInput } from './rubric.js'
export { characterBenchRubrics, characterEvalRubrics, personaGymRubrics, rubricSets } from './rubric-sets.js'
