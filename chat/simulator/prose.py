"""The simulated model's small talk: plausible, deterministic Markdown that quotes the user.

Quotes keep only letters, digits and plain punctuation, so nothing the user typed can turn into
markup in the reply (the "reply with exactly:" hook is the way to test hostile text).
"""

from __future__ import annotations

import random
import re

SIGNATURE = "_(simulated reply)_"
_OPENINGS = (
    "You asked about **“{quote}”**, so here is a short answer.",
    "Thanks for your message about **{quote}**.",
    "Good question: **“{quote}”**.",
    "Let's look at **“{quote}”** together.",
)
_SENTENCES = (
    "The simplest approach is usually the best place to start, and you can refine it later.",
    "It often helps to split the problem into **small steps** and check each one before moving on.",
    "A concrete example tends to make the trade-offs much easier to see.",
    "Writing down the result you expect first is a good way to get unstuck.",
    "Most of the effort usually goes into the edge cases rather than the main path.",
    "Keeping short notes as you go makes it easy to pick this up again later.",
    "It is worth checking the assumptions early, because they shape **everything** that follows.",
)
_ITEMS = (
    "**Start small** and iterate",
    "Check your assumptions",
    "Write a quick test first",
    "Keep the moving parts few",
    "Ask for details whenever you need them",
    "Measure before you optimise",
)
_LONG = (
    "Every good answer starts by making the question precise, because a vague question invites a "
    "vague answer and wastes time for everyone involved.",
    "Once the question is clear, the next step is to list what is already known and what still "
    "needs to be found out, even if the list looks obvious.",
    "Small experiments are cheap, so it pays to try two or three quick variations before "
    "committing to one of them for the long run.",
    "When the results disagree with the expectation, that disagreement is information rather than "
    "failure, and it usually points straight at a hidden assumption.",
    "It also helps to explain the idea to somebody else, because gaps in the reasoning become "
    "visible as soon as they have to be put into words.",
    "Trade-offs are rarely absolute: a choice that is right for a prototype can be wrong for a "
    "system that many people depend on every day.",
    "Documentation written while the details are still fresh is far more useful than notes "
    "reconstructed weeks later from memory.",
    "Automated checks protect the work from regressions and give the confidence to change things "
    "without fear of breaking what already works.",
    "Performance matters, but correctness comes first, and measurements should guide any "
    "optimisation rather than intuition alone.",
    "Finally, a short review after the work is done turns one success into a repeatable habit "
    "for the next project.",
)


def quote_of(text: str, words: int = 6) -> str:
    """A few words of `text`, reduced to harmless characters."""
    parts = re.sub(r"[^A-Za-z0-9 ,.'?!-]+", " ", text).split()
    quote = " ".join(parts[:words]).strip(" ,.")
    return quote + "…" if len(parts) > words and quote else quote


def wants_long_answer(text: str) -> bool:
    return (
        re.search(r"\blong (?:answer|reply|response)\b|\bin (?:great )?detail\b", text, re.I)
        is not None
    )


def short_reply(text: str, rng: random.Random) -> str:
    quote = quote_of(text)
    if re.match(r"\s*(?:hi|hello|hey)\b", text, re.I):
        opening = "Hello! Nice to hear from you."
    elif quote:
        opening = rng.choice(_OPENINGS).format(quote=quote)
    else:
        opening = "Thanks for your message."
    paragraphs = [" ".join([opening, *rng.sample(_SENTENCES, 2)])]
    if rng.random() < 0.5:
        items = "\n".join(f"- {item}" for item in rng.sample(_ITEMS, 3))
        paragraphs.append(f"A few things to keep in mind:\n\n{items}")
    paragraphs.append(f"Let me know if you would like more detail. {SIGNATURE}")
    return "\n\n".join(paragraphs)


def long_reply(text: str, rng: random.Random) -> str:
    """About 400 words in five paragraphs under a heading."""
    quote = quote_of(text) or "your question"
    intro = f"You asked for a detailed answer to **“{quote}”**. {rng.choice(_LONG)}"
    paragraphs = [f"## A longer answer\n\n{intro}"]
    for _ in range(5):
        paragraphs.append(" ".join(rng.sample(_LONG, 3)))
    items = "\n".join(f"- {item}" for item in rng.sample(_ITEMS, 4))
    paragraphs.append(f"In short:\n\n{items}\n\n{SIGNATURE}")
    return "\n\n".join(paragraphs)
