// One prompt, whole (generateText) then streamed (streamText), through an AI SDK
// provider: `node text.mjs <url> <model> <provider>`. Prints both texts and what the
// stream's parts were.
import { generateText, streamText } from 'ai';
import { args, languageModel, run, thinkingOptions } from './lib.mjs';

const { url, model, provider } = args();
const thinking = process.argv.includes('--thinking');

run(async () => {
  const options = {
    model: languageModel(provider, url, model),
    prompt: 'Hello from the AI SDK.',
    maxRetries: 0,
    ...(thinking ? { providerOptions: thinkingOptions(provider) } : {}),
  };
  const whole = await generateText(options);
  const stream = streamText({ ...options, onError: ({ error }) => { throw error; } });
  const kinds = new Set();
  let reasoning = '';
  for await (const part of stream.fullStream) {
    kinds.add(part.type);
    if (part.type === 'error') throw part.error;
    if (part.type === 'reasoning-delta') reasoning += part.text;
  }
  return {
    text: whole.text,
    reasoning: whole.reasoningText ?? null,
    streamed: await stream.text,
    streamedReasoning: reasoning,
    streamParts: [...kinds].sort(),
    finish: await stream.finishReason,
  };
});
