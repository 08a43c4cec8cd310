"""Protocol iwr-official: the paper's judge through an operator's OpenAI-compatible endpoint.

The parts, each small and testable on its own:

- :mod:`.config`     the operator's settings (endpoint, model ids, key variable, weights) and their checks;
- :mod:`.relay`      the judge relay, OUTSIDE the job sandbox: it alone holds the key, the request
                     cache and the job's budget, retries rate limits and server errors, and answers
                     the sandboxed job over a Unix socket (the job keeps no network);
- :mod:`.client`     the job's side of that socket;
- :mod:`.prompts`    the judge's prompts, in our own words (page content is data, never instructions);
- :mod:`.answers`    reading the judge's answers, with the two official quirks recorded, never hidden;
- :mod:`.judge`      grounding, Type/Press inference, assertions and the visual rubric of one task;
- :mod:`.visual`     EasyOCR text similarity and DINOv2-base CLS cosine, loaded only from the optional
                     environment (requirements-official.txt, scripts/setup-official.sh).

Nothing here imports Django, and importing the package has no side effect.
"""
