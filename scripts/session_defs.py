"""The 16 committed demo sessions: one definition shared by make_speech.py, make_text_images.py,
make_reference.py and train_recommender.py. Changing a text here means re-running those scripts
(see data/README.md) and committing the regenerated data/.

Each session: a question category, a spoken English sentence (espeak-ng -> data/speech/<id>.wav,
after `lead_s` seconds of silence) and 1-2 lines of text rendered into data/images/<id>.png.
Both texts are about the session's category; the recommender sees the recognized image text and
the speech activity (there is no speech recognition in the pipeline).
"""

CATEGORIES = ["billing", "shipping", "technical", "account"]

# id, category, leading silence (samples at 16 kHz, 0.4-1.2 s; chosen with
# `make_speech.py --search-leads` so that silero-vad's first/last chunk above 0.5 falls within +-1
# chunk of the known onset/offset chunks), spoken sentence, image text lines
SESSIONS = [
    ("s00", "billing", 6608, "I was charged twice for my monthly bill.",
     ["Invoice 4821: duplicate charge", "Please refund the extra payment"]),
    ("s01", "billing", 16661, "Is my invoice higher this month?",
     ["Billing statement for March", "Amount due: 59.90 USD"]),
    ("s02", "billing", 18347, "I need a refund for the late fee.",
     ["Late payment fee added to invoice"]),
    ("s03", "billing", 10667, "I paid my bill with a credit card.",
     ["Payment method: credit card", "Charge declined, balance unpaid"]),
    ("s04", "shipping", 16720, "I am waiting for a tracking number.",
     ["Tracking number 4471 shows in transit"]),
    ("s05", "shipping", 7744, "I want to change my delivery address.",
     ["Delivery address: 12 Oak Street", "Parcel left at the wrong door"]),
    ("s06", "shipping", 14821, "I need express shipping for my order.",
     ["Express shipping: 2 business days"]),
    ("s07", "shipping", 7253, "Our parcel arrived damaged yesterday.",
     ["Return label for damaged parcel", "Courier pickup on Friday"]),
    ("s08", "technical", 13227, "Every time I open the app, it crashes.",
     ["Error 503: service unavailable", "The app crashed on startup"]),
    ("s09", "technical", 19056, "Our router keeps dropping the connection.",
     ["Router status: no internet connection"]),
    ("s10", "technical", 11648, "I get an error when I install the update.",
     ["Update failed with error code 1603"]),
    ("s11", "technical", 17509, "Everything is very slow after the upgrade.",
     ["Server timeout after software upgrade", "Restart the device and try again"]),
    ("s12", "account", 9813, "I forgot my password and cannot log in.",
     ["Reset your password", "Login failed: wrong password"]),
    ("s13", "account", 15787, "I want to change the email on my account.",
     ["Account settings: change email address"]),
    ("s14", "account", 8107, "I am locked out of my account.",
     ["Account locked after 3 failed sign in attempts"]),
    ("s15", "account", 14080, "I cannot delete my profile and username.",
     ["Delete profile", "Username and personal data"]),
]

SESSIONS_JSON = "data/sessions.json"


def load_sessions_json(root):
    """data/sessions.json as a dict (empty skeleton when missing)."""
    import json
    import os
    path = os.path.join(root, SESSIONS_JSON)
    if os.path.isfile(path):
        with open(path) as f:
            return json.load(f)
    return {}


def save_sessions_json(root, doc):
    import json
    import os
    path = os.path.join(root, SESSIONS_JSON)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path + ".tmp", "w") as f:
        json.dump(doc, f, indent=2)
        f.write("\n")
    os.replace(path + ".tmp", path)


def session_entry(doc, sid):
    """The entry for session `sid` in doc["sessions"], created in SESSIONS order when missing."""
    sessions = doc.setdefault("sessions", [])
    for s in sessions:
        if s["id"] == sid:
            return s
    order = [d[0] for d in SESSIONS]
    entry = {"id": sid}
    sessions.append(entry)
    sessions.sort(key=lambda s: order.index(s["id"]))
    return entry
