#!/usr/bin/env python3
"""The data and scoring side of scripts/eval-locomo.sh (standard library only).

  eval_locomo.py unpack ZIP DIR                 check the source's sha256, unpack its ten
                                                 conversations into DIR (one JSON file each)
  eval_locomo.py conversations DIR              the conversation ids, one a line
  eval_locomo.py memories DIR CONV [--plain]    memory records for slayer-memory import: one
                                                 per turn, with its event time and session
                                                 (--plain: without them, for a build that
                                                 predates them)
  eval_locomo.py requests DIR CONV CHANNELS [--tuning JSON] [--plain]
                                                 slayer-search --batch requests, asked the day
                                                 after the last session (--plain: without
                                                 as_of, for a build that predates it)
  eval_locomo.py score DIR RESULTS              hit@1, hit@3, recall@5, recall@10 and nDCG@10 by question
                                                 type, from RESULTS (lines of
                                                 "conv<TAB>response JSON")
  eval_locomo.py selftest                        the parsing and metrics against hand-computed
                                                 values

The source is LoCoMo (Maharana et al., ACL 2024): ten long conversations between two people,
each of up to 35 sessions, with questions whose `evidence` names the dialogue turns that hold
the answer. Each turn becomes one memory (id `<conv>.D<session>.<turn>`), its learning the
speaker's name and words (and the caption of a shared photo), its event time the session's
date, its session `<conv>.s<n>`. Each conversation is one agent's store, so each question is
searched in the store of its conversation. Question types follow the data's `category`:
1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial (the question names the
wrong person; its evidence is still the turn it is about). Questions whose evidence names no
turn of the conversation are left out.
"""
import datetime
import hashlib
import io
import json
import math
import os
import re
import sys
import zipfile

# snap-research/locomo at commit e76cdff4a04fce19090596d49862fe87a5c15aaa, data/locomo10.zip.
SOURCE_SHA256 = "5c342973da4b45c12583c9fc7594d6410880f5aba2c491a0db09db262c906fb5"
CONVERSATIONS = 10
TYPES = {1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial"}
TYPE_ORDER = ["single-hop", "multi-hop", "temporal", "open-domain", "adversarial"]
MONTHS = {m: i + 1 for i, m in enumerate(
    "january february march april may june july august september october november december"
    .split())}
# Every memory's created_at: one batch ingest saved them all after the conversations, a second
# apart, in the order they were said (so a session's memories keep their order).
INGESTED_AT = datetime.datetime(2024, 1, 1, tzinfo=datetime.timezone.utc)
MAX_MEMORIES = 10


def sha256_of(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def unpack(zip_path, out_dir):
    got = sha256_of(zip_path)
    if got != SOURCE_SHA256:
        sys.exit(f"{zip_path}: sha256 {got}, expected {SOURCE_SHA256} (snap-research/locomo "
                 "at e76cdff, data/locomo10.zip); fetch that file and run again")
    os.makedirs(out_dir, exist_ok=True)
    with zipfile.ZipFile(zip_path) as z:
        names = sorted(n for n in z.namelist() if re.search(r"locomo10_v2/\d+\.json$", n))
        if len(names) != CONVERSATIONS:
            sys.exit(f"{zip_path}: {len(names)} conversations, expected {CONVERSATIONS}")
        for name in names:
            conv = os.path.basename(name)[:-5]
            data = json.load(io.TextIOWrapper(z.open(name), encoding="utf-8"))
            with open(os.path.join(out_dir, f"{conv}.json"), "w", encoding="utf-8") as f:
                json.dump(data, f)


def conversation_ids(data_dir):
    return sorted(f[:-5] for f in os.listdir(data_dir) if f.endswith(".json"))


def load(data_dir, conv):
    with open(os.path.join(data_dir, f"{conv}.json"), encoding="utf-8") as f:
        return json.load(f)


def session_numbers(conv_data):
    return sorted(int(k.split("_")[1]) for k in conv_data
                  if re.fullmatch(r"session_\d+", k) and isinstance(conv_data[k], list))


def event_time(text):
    """'1:56 pm on 8 May, 2023' -> '2023-05-08T13:56:00Z'."""
    m = re.fullmatch(r"\s*(\d{1,2}):(\d{2})\s*([ap]m)\s+on\s+(\d{1,2})\s+(\w+),?\s+(\d{4})\s*",
                     text, re.I)
    if not m:
        raise ValueError(f"unreadable session time {text!r}")
    hour, minute, half, day, month, year = m.groups()
    hour = int(hour) % 12 + (12 if half.lower() == "pm" else 0)
    return "%s-%02d-%02dT%02d:%s:00Z" % (year, MONTHS[month.lower()], int(day), hour, minute)


def turn_id(conv, dia_id):
    session, turn = dia_id[1:].split(":")
    return f"{conv}.D{int(session)}.{int(turn)}"


def memories(conv, conv_data, plain=False):
    said = 0
    for n in session_numbers(conv_data):
        when = event_time(conv_data[f"session_{n}_date_time"])
        for turn in conv_data[f"session_{n}"]:
            learning = f"{turn['speaker']}: {turn['text']}"
            if turn.get("blip_caption"):
                learning += f" [shares {turn['blip_caption']}]"
            saved = INGESTED_AT + datetime.timedelta(seconds=said)
            said += 1
            record = {"kind": "memory", "id": turn_id(conv, turn["dia_id"]),
                      "learning": learning, "entities": [],
                      "created_at": saved.strftime("%Y-%m-%dT%H:%M:%SZ")}
            if not plain:
                record["event_time"] = when
                record["session"] = f"{conv}.s{n}"
            yield record


def evidence_ids(conv, raw, known):
    """The turns a question's evidence names; a few are typed as 'D8:6; D9:17' or 'D30:05'."""
    out = []
    for item in raw:
        for m in re.finditer(r"D(\d+):(\d+)", item):
            tid = f"{conv}.D{int(m.group(1))}.{int(m.group(2))}"
            if tid in known and tid not in out:
                out.append(tid)
    return out


def questions(conv, conv_data):
    known = {r["id"] for r in memories(conv, conv_data, plain=True)}
    for qa in conv_data["qa"]:
        gold = evidence_ids(conv, qa.get("evidence") or [], known)
        if gold:
            yield {"question": qa["question"], "type": TYPES[qa["category"]], "gold": gold}


def recall_at(ranking, gold, k):
    return len(set(gold) & set(ranking[:k])) / len(gold)


def hit_at(ranking, gold, k):
    """1 when an evidence turn is among the first k: precision at the top, what an agent reads."""
    return 1.0 if set(gold) & set(ranking[:k]) else 0.0


def ndcg_at(ranking, gold, k=10):
    dcg = sum(1 / math.log2(i + 2) for i, d in enumerate(ranking[:k]) if d in gold)
    idcg = sum(1 / math.log2(i + 2) for i in range(min(len(gold), k)))
    return dcg / idcg


def answered(data_dir, results_path):
    """Each question with its response, conversation by conversation (results: `conv<TAB>json`
    lines in the order of the conversation's questions)."""
    by_conv = {}
    with open(results_path, encoding="utf-8") as f:
        for line in f:
            conv, response = line.rstrip("\n").split("\t", 1)
            by_conv.setdefault(conv, []).append(json.loads(response))
    for conv, got in sorted(by_conv.items()):
        qs = list(questions(conv, load(data_dir, conv)))
        assert len(got) == len(qs), (conv, len(got), len(qs))
        yield from zip(qs, got)


def score(data_dir, results_path):
    sums = {}
    for q, response in answered(data_dir, results_path):
        ranking = [h["id"] for h in response.get("memories", [])]
        figures = (hit_at(ranking, q["gold"], 1), hit_at(ranking, q["gold"], 3),
                   recall_at(ranking, q["gold"], 5), recall_at(ranking, q["gold"], 10),
                   ndcg_at(ranking, q["gold"]))
        for key in (q["type"], "all but adversarial" if q["type"] != "adversarial" else None):
            if key is None:
                continue
            s = sums.setdefault(key, [0] + [0.0] * len(figures))
            s[0] += 1
            for i, v in enumerate(figures):
                s[i + 1] += v
    for key in TYPE_ORDER + ["all but adversarial"]:
        if key in sums:
            n, *totals = sums[key]
            print("\t".join([key, str(n)] + ["%.3f" % (t / n) for t in totals]))


def oracle_at(ranking, gold, k, places=10):
    """Recall@places a perfect re-ranker of the first k would give: every evidence turn among
    them moved into the first `places` (issue 63's ceiling of re-ranking)."""
    return min(len(set(gold) & set(ranking[:k])), places) / len(gold)


def ceiling(data_dir, results_path, depths=(10, 20, 30, 50)):
    sums = {}
    for q, response in answered(data_dir, results_path):
        ranking = [h["id"] for h in response.get("memories", [])]
        s = sums.setdefault(q["type"], [0] + [0.0] * len(depths))
        s[0] += 1
        for i, k in enumerate(depths):
            s[i + 1] += oracle_at(ranking, q["gold"], k)
    print("\t".join(["type", "questions"] + ["from %d" % k for k in depths]))
    for key in TYPE_ORDER:
        if key in sums:
            n, *totals = sums[key]
            print("\t".join([key, str(n)] + ["%.3f" % (t / n) for t in totals]))


def arg(name, default=None):
    return sys.argv[sys.argv.index(name) + 1] if name in sys.argv else default


def selftest():
    assert event_time("1:56 pm on 8 May, 2023") == "2023-05-08T13:56:00Z"
    assert event_time("12:48 am on 1 February, 2023") == "2023-02-01T00:48:00Z"
    assert event_time("12:05 pm on 3 June, 2022") == "2022-06-03T12:05:00Z"
    known = {"26.D8.6", "26.D9.17", "26.D30.5"}
    assert evidence_ids("26", ["D8:6; D9:17", "D30:05", "D", "D8:6"], known) == \
        ["26.D8.6", "26.D9.17", "26.D30.5"]
    gold = ["a", "b"]
    assert recall_at(["x", "a"], gold, 5) == 0.5
    assert hit_at(["x", "a"], gold, 1) == 0.0 and hit_at(["x", "a"], gold, 3) == 1.0
    want = (1 / math.log2(3) + 0.5) / (1 + 1 / math.log2(3))
    assert abs(ndcg_at(["x", "a", "b"], gold) - want) < 1e-12
    assert ndcg_at([], gold) == 0.0
    assert oracle_at(["x", "y", "a"], gold, 2) == 0.0 and oracle_at(["x", "y", "a"], gold, 3) == 0.5
    assert oracle_at(["a", "x", "b"], gold, 3, places=1) == 0.5
    print("selftest ok")


def main():
    cmd = sys.argv[1]
    if cmd == "unpack":
        unpack(sys.argv[2], sys.argv[3])
    elif cmd == "conversations":
        print("\n".join(conversation_ids(sys.argv[2])))
    elif cmd == "memories":
        conv = sys.argv[3]
        for record in memories(conv, load(sys.argv[2], conv), plain="--plain" in sys.argv):
            print(json.dumps(record))
    elif cmd == "requests":
        conv, channels = sys.argv[3], sys.argv[4].split(",")
        tuning = json.loads(arg("--tuning", "{}"))
        data = load(sys.argv[2], conv)
        last = max(event_time(data[f"session_{n}_date_time"]) for n in session_numbers(data))
        for q in questions(conv, data):
            request = {"question": q["question"],
                       "max_memories": int(arg("--max-memories", MAX_MEMORIES)),
                       "max_example_queries": 0, "max_entities": 0, "channels": channels,
                       "tuning": tuning}
            if "--plain" not in sys.argv:
                request["as_of"] = last[:10]
            print(json.dumps(request))
    elif cmd == "score":
        score(sys.argv[2], sys.argv[3])
    elif cmd == "ceiling":
        ceiling(sys.argv[2], sys.argv[3])
    elif cmd == "selftest":
        selftest()
    else:
        sys.exit(f"unknown command {cmd}")


if __name__ == "__main__":
    main()
