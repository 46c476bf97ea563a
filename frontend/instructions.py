"""What the rater reads above the pairs, per task kind, in the project's own words."""

# The scale's level names and texts are facts of the task that the quiz API tells raters
# too; they live with the other CxC facts (annotation.cxc) and the pages take them here.
from annotation.cxc import LEVEL_DETAILS, LEVEL_NAMES, level_name, levels_for  # noqa: F401

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
