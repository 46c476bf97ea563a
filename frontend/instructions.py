"""What the rater reads above the pairs, per task kind, in the project's own words."""

INSTRUCTIONS = {
    "STS": {
        "title": "Compare two sentences",
        "task": "How close in meaning are the two sentences?",
        "points": [
            "Read both sentences in full before you move the slider.",
            "Judge meaning, not wording: two sentences can share few words and still mean the same thing.",
            "Count who and what is involved, what happens, and where. Missing or different important details "
            "lower the similarity; small details matter less.",
            "The scale is continuous: place the handle anywhere between the levels, wherever the pair belongs.",
            "Skip a pair you cannot judge; flag it if something is wrong with it (unreadable, inappropriate).",
        ],
    },
    "SIS": {
        "title": "Compare two pictures",
        "task": "How similar are the scenes in the two pictures?",
        "points": [
            "Look at both pictures as a whole: the people or animals, what they do, the objects and the setting.",
            "Near-duplicate scenes seen from another viewpoint count as equivalent.",
            "Colours and image quality matter little; what the scene shows matters most.",
            "The scale is continuous: place the handle anywhere between the levels, wherever the pair belongs.",
            "Skip a pair you cannot judge; flag it if a picture is broken or inappropriate.",
        ],
    },
    "SITS": {
        "title": "Compare a sentence with a picture",
        "task": "How well does the sentence describe the picture?",
        "points": [
            "Read the sentence, then look for each thing it says in the picture.",
            "A sentence that describes the picture almost perfectly belongs at the right end of the slider; one "
            "about something else entirely belongs at the left end.",
            "Hover over a level name under the slider to read its full description; once you place the handle, "
            "the description of the nearest level shows.",
            "The scale is continuous: place the handle anywhere between the levels, wherever the pair belongs.",
            "Skip a pair you cannot judge; flag it if the picture is broken or the sentence is unreadable.",
        ],
    },
}


# The six levels of the 0-5 scale, lowest first. Names carry no digits: the slider's
# screen-reader text names the nearest level, never a number.
LEVEL_NAMES = (
    "Unrelated",
    "Same topic only",
    "Some shared details",
    "Roughly equivalent",
    "Mostly equivalent",
    "Equivalent",
)

LEVEL_DETAILS = {
    "STS": (
        "The two sentences are about different things.",
        "Not equivalent; they only touch the same topic or a loosely related theme.",
        "Not equivalent, but they share some details: people, actions, objects or setting.",
        "Roughly the same meaning, but an important detail differs or is missing.",
        "Mostly the same meaning; only unimportant details differ.",
        "The two sentences mean the same thing.",
    ),
    "SIS": (
        "The two pictures are completely dissimilar.",
        "Not the same kind of scene; only the general theme is related.",
        "Different scenes that share some details: people, actions, objects or background.",
        "Roughly the same kind of scene, but an important part differs or is missing.",
        "Mostly the same kind of scene; similar participants, actions, objects and background, small differences.",
        "Near-duplicate scenes, possibly seen from another viewpoint.",
    ),
    "SITS": (
        "The sentence and the picture are completely unmatched.",
        "The sentence only shares the picture's general topic or theme.",
        "Not a description of the picture, but it names some of its details: people, actions, objects, background.",
        "The sentence roughly describes the picture, but gets an important detail wrong or leaves it out.",
        "The sentence describes the picture well; only unimportant details are off or missing.",
        "The sentence is an almost perfect description of the picture.",
    ),
}


def levels_for(kind: str) -> list[dict]:
    """[{"level": 0, "name": ..., "detail": ...}, ...] for one task kind."""
    return [
        {"level": level, "name": name, "detail": detail}
        for level, (name, detail) in enumerate(zip(LEVEL_NAMES, LEVEL_DETAILS[kind], strict=True))
    ]


def level_name(score: float) -> str:
    """Name of the level nearest to a score on the 0-5 scale."""
    return LEVEL_NAMES[min(len(LEVEL_NAMES) - 1, max(0, round(score)))]
