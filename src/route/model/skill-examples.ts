import type { Skill } from '../../core/route-types.js';
import type { TrainingExample } from './text-classifier.js';

/**
 * Lead-ins that describe how to use a skill rather than what it is about; dropping them keeps
 * phrases such as "use when something is broken" from teaching the model the words "use when".
 */
const LEAD_IN =
  /^(?:use(?: it| this(?: skill)?)? (?:when|for|to|if)|such as|for example|e\.g\.|i\.e\.|including|covering|like|usually|typically)\s+/i;

/** Phrases shorter than this many letters ("it", "a") are noise, not routing signal. */
const MIN_PHRASE_LETTERS = 3;

/**
 * How many characters of a skill's body (its prose, markdown stripped) are read. The opening of a
 * skill's instructions says what the skill is for; further down come steps, commands and caveats that
 * every skill shares ("run the tests"), which would blur the skills into each other.
 */
const BODY_PROSE_CHARACTERS = 600;

/**
 * Training examples derived from skills: each skill's name (split into words), its description as a
 * whole, each sentence and each comma- or "or"-separated phrase of it, the sentences that open its
 * body (see `bodyProse`), and its listed examples. A skill
 * described in a single sentence thus still yields several short texts that look like requests.
 */
export function examplesFromSkills(skills: readonly Skill[]): TrainingExample[] {
  const examples: TrainingExample[] = [];
  for (const skill of skills) {
    const texts = new Set<string>();
    texts.add(humanizeName(skill.name));
    for (const phrase of descriptionPhrases(skill.description)) texts.add(phrase);
    if (skill.body !== undefined) {
      // Whole sentences, not the comma-separated phrases a description is cut into: instructions
      // list steps ("reproduce, find the cause, fix it"), and a step alone ("verify the deployment")
      // is a weak cue that pulled requests to the wrong skill on the dev sets.
      for (const sentence of bodyProse(skill.body).split(/(?<=[.!?])\s+/)) {
        texts.add(stripPunctuation(sentence));
      }
    }
    for (const example of skill.examples) if (example.trim() !== '') texts.add(example.trim());
    for (const text of texts) {
      if (text.replace(/[^\p{L}\p{N}]/gu, '').length >= MIN_PHRASE_LETTERS) {
        examples.push({ text, label: skill.name });
      }
    }
  }
  return examples;
}

/** "bug-brief" / "bugBrief" / "bug_brief" → "bug brief". */
export function humanizeName(name: string): string {
  return name
    .replace(/([\p{Ll}\p{N}])(\p{Lu})/gu, '$1 $2')
    .replace(/[-_./:]+/g, ' ')
    .trim()
    .toLowerCase();
}

/** The description, its sentences, and the phrases of each sentence, without duplicates. */
export function descriptionPhrases(description: string): string[] {
  const cleaned = description.replace(/["“”]/g, '').replace(/\s+/g, ' ').trim();
  if (cleaned === '') return [];
  const phrases = new Set<string>([cleaned]);
  for (const sentence of cleaned.split(/(?<=[.!?])\s+/)) {
    const trimmedSentence = stripPunctuation(sentence);
    if (trimmedSentence !== '') phrases.add(trimmedSentence);
    for (const part of trimmedSentence.split(/\s*[,;:()]\s*|\s+(?:or|and\/or)\s+/i)) {
      const phrase = stripPunctuation(part)
        .replace(/^(?:or|and)\s+/i, '')
        .replace(LEAD_IN, '');
      if (phrase !== '') phrases.add(phrase);
    }
  }
  return [...phrases];
}

/**
 * The opening prose of a markdown body: code blocks, headings, tables, HTML and link targets dropped,
 * list items and lines joined as sentences, cut at a sentence end near BODY_PROSE_CHARACTERS.
 */
export function bodyProse(body: string): string {
  const sentences: string[] = [];
  let length = 0;
  const text = body.replace(/```[\s\S]*?(?:```|$)|~~~[\s\S]*?(?:~~~|$)|<!--[\s\S]*?-->/g, '\n');
  for (const rawLine of text.split(/\r?\n/)) {
    const line = rawLine
      .replace(/^\s*(?:[-*+]|\d+[.)])\s+/, '')
      .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
      .replace(/<[^>]+>|[*_`]+/g, '')
      .trim();
    if (line === '' || /^#|^\||^>/.test(rawLine.trim())) continue;
    sentences.push(/[.!?:]$/.test(line) ? line : `${line}.`);
    length += line.length;
    if (length >= BODY_PROSE_CHARACTERS) break;
  }
  return sentences.join(' ');
}

function stripPunctuation(text: string): string {
  return text.replace(/^[\s.,;:!?-]+|[\s.,;:!?-]+$/g, '');
}
