# Native text uses its own punctuation (fullwidth parentheses, en dashes) on purpose.
# ruff: noqa: RUF001
"""The scripted conversations behind `seed_demo`: voice-agent calls in nine languages.

Each agent turn is written as the text the agent sent to TTS (`text`) and, where TTS deviated, what the
caller actually heard (`said`). The failure categories on a turn are the gold truth for the three demo
judges: `concise` (conciseness), `speak` (speakability) and `tts` (tts_fidelity).
"""

from __future__ import annotations

import json


def U(text: str) -> dict:
    return {"role": "user", "text": text}


def A(
    text: str,
    *,
    said: str = "",
    concise: tuple[str, ...] = (),
    speak: tuple[str, ...] = (),
    tts: tuple[str, ...] = (),
) -> dict:
    return {"role": "agent", "text": text, "said": said, "concise": concise, "speak": speak, "tts": tts}


def T(tool: str, **arguments) -> dict:
    return {"role": "tool_call", "tool": tool, "text": json.dumps(arguments, ensure_ascii=False)}


def R(tool: str, **payload) -> dict:
    return {"role": "tool_response", "tool": tool, "text": json.dumps(payload, ensure_ascii=False)}


GLOSS = "gloss"
WRONG_LANGUAGE = "wrong-language-phrase"
LETTER_NAMES = "spelled-code-letter-names"
POLITENESS = "politeness-formula"
NUMBER = "number-reading"
ACRONYM = "acronym-expansion"
ENTITY = "entity-error"
TRUNCATION = "truncation"
FILLER = "filler"
VERBOSITY = "verbosity"

# language -> list of (slug, scenario, agent name, turns)
CONVERSATIONS: dict[str, list[tuple[str, str, str, list[dict]]]] = {
    "en": [
        (
            "airline-rebooking",
            "Airline rebooking after a cancellation",
            "Ava",
            [
                A("Thanks for calling Skyline Airways, this is Ava. How can I help you today?"),
                U("Hi, my flight to Denver tonight got cancelled and I need to get on another one."),
                A("I'm sorry to hear that. Could you read me your six-character confirmation code?"),
                U("Sure, it's Q as in Queen, 7, X, R, 2, M."),
                T("find_booking", confirmation_code="Q7XR2M"),
                R(
                    "find_booking",
                    passenger="Dana Whitfield",
                    flight="SK 482",
                    status="cancelled",
                    alternatives=[
                        {"flight": "SK 490", "departs": "21:05"},
                        {"flight": "SK 112", "departs": "07:40 next day"},
                    ],
                ),
                A(
                    "I found your booking, Ms. Whitfield. I can move you to SK 490 tonight at 9:05 PM, or SK 112 tomorrow at 7:40 AM. Which would you prefer?",
                    said="I found your booking, Ms. Whitfield. I can move you to SK 490 tonight at 9:05 PM, or SK 112 tomorrow at",
                    tts=(TRUNCATION,),
                ),
                U("Sorry, you cut out. Tonight's flight, please."),
                T("rebook", confirmation_code="Q7XR2M", flight="SK 490"),
                R("rebook", status="confirmed", seat="14C"),
                A("Done. You're on SK 490 tonight at 9:05 PM, seat 14C, and your confirmation code stays the same."),
            ],
        ),
        (
            "bank-card-fraud",
            "Blocking a bank card after a suspicious charge",
            "Noah",
            [
                A("Northbridge Bank card services, this is Noah. What can I do for you?"),
                U(
                    "There's a charge on my debit card I didn't make. The merchant name on the statement is literally <script>alert(1)</script>, and there's another one that says <img src=x onerror=alert(1)>. Looks like a scam."
                ),
                A(
                    "Thanks for telling us right away. For security, can you confirm the last four digits of the card and your date of birth?"
                ),
                U("Last four are 4417, and I was born March 3rd, 1986."),
                T("verify_customer", card_last4="4417", date_of_birth="1986-03-03"),
                R("verify_customer", verified=True, customer="Priya Raman", pending_charges=[{"amount": 249.99}]),
                A(
                    "Thank you, Ms. Raman. I see a pending charge of $249.99. I'll block the card now and dispute that charge.",
                    said="Thank you, Ms. Raman. I see a pending charge of two hundred forty-nine dollars point nine nine. I'll block the card now and dispute that charge.",
                    tts=(NUMBER,),
                ),
                T("block_card", card_last4="4417", reason="fraud"),
                R("block_card", status="blocked", replacement_eta_days=5),
                A(
                    "Your card is blocked. A replacement will arrive within five business days, and the disputed amount will not be charged while we investigate. Is there anything else I can help you with today? We really appreciate your patience and thank you so much for being a valued Northbridge customer.",
                    concise=(POLITENESS, VERBOSITY),
                ),
            ],
        ),
        (
            "pharmacy-refill",
            "Prescription refill",
            "Mia",
            [
                A("Good afternoon, Greenleaf Pharmacy, Mia speaking."),
                U("Hi, I need to refill my blood pressure medication. The prescription number is RX 5 5 0 1 9."),
                T("lookup_prescription", rx_number="55019"),
                R("lookup_prescription", drug="Lisinopril 10 mg", refills_left=2, patient="Tom Becker"),
                A(
                    "Got it, Mr. Becker. That's Lisinopril, 10 milligrams, with two refills left. It'll be ready after 4 PM today.",
                    said="Got it, Mr. Becker. That's Lisinopril, 10 milligrams, with two refills left. It'll be ready after four post meridiem today.",
                    tts=(ACRONYM,),
                ),
                U("Great. Can my wife pick it up?"),
                A(
                    "Yes, um, she can, so basically she just needs to, like, bring her photo ID and give your date of birth at the counter.",
                    concise=(FILLER,),
                ),
                U("Perfect, thanks."),
                A("You're welcome. Have a good day."),
            ],
        ),
        (
            "hotel-late-checkout",
            "Hotel reservation change",
            "Liam",
            [
                A("Harbor View Hotel reservations, this is Liam."),
                U("Hi, I have a reservation for next Friday and I'd like to add a night and ask for late checkout."),
                A("Happy to help. What's the name on the reservation?"),
                U("Okonkwo. O K O N K W O."),
                T("find_reservation", last_name="Okonkwo"),
                R("find_reservation", reservation="HV-20931", nights=2, room="King, sea view", rate=189),
                A(
                    "I have you in a king room with a sea view for two nights. Adding a third night is $189, and I can offer checkout at 1 PM.",
                    said="I have you in a king room with a sea view for two nights. Adding a third night is $189, and I can offer checkout at 1 PM.",
                ),
                U("Yes, do both."),
                T("update_reservation", reservation="HV-20931", nights=3, late_checkout="13:00"),
                R("update_reservation", status="updated"),
                A(
                    "All set: three nights, checkout at 1 PM, reservation HV-20931.",
                    said="All set: three nights, checkout at 1 PM, reservation H V twenty thousand nine hundred thirty-one.",
                    tts=(NUMBER,),
                ),
            ],
        ),
        (
            "internet-outage",
            "Home internet outage",
            "Zoe",
            [
                A("Bluewave support, Zoe here. Are you calling about your home internet?"),
                U("Yes, it's been down since this morning. The router light is blinking orange."),
                T("check_outage", postcode="94110"),
                R("check_outage", outage=True, area="Mission District", eta="18:00"),
                A(
                    "There's an outage in the Mission District. Technicians expect service back around 6 PM. Your router's blinking orange light just means it's waiting for the network.",
                ),
                U("Will I get a credit for this?"),
                A(
                    "Yes. Outages over four hours get an automatic credit on your next bill; you don't need to do anything. I can also text you when service is back, if you like.",
                ),
                U("Yes, text me please."),
                A(
                    "Done. You'll get a text at the number ending 0 2 7.",
                    said="Done. You'll get a text at the number ending oh two seven.",
                ),
            ],
        ),
        (
            "parcel-redelivery",
            "Missed parcel delivery",
            "Ethan",
            [
                A("Swiftship customer line, this is Ethan."),
                U("A driver left a card saying I missed a delivery. Tracking number is SW 7 7 4 1 0 9 3."),
                T("track_parcel", tracking_number="SW7741093"),
                R("track_parcel", status="held at depot", depot="Eastgate", redelivery_slots=["Tue 9-12", "Tue 13-17"]),
                A(
                    "Your parcel is at our Eastgate depot. I can redeliver it Tuesday morning, 9 to 12, or Tuesday afternoon, 1 to 5.",
                    said="Your parcel is at our Eastgate depot. I can redeliver it Tuesday morning, 9 to 12, or Tuesday afternoon, 1 to 5.",
                ),
                U("Afternoon works."),
                T("schedule_redelivery", tracking_number="SW7741093", slot="Tue 13-17"),
                R("schedule_redelivery", status="scheduled"),
                A(
                    "Booked for Tuesday between 1 and 5 PM. The driver will call 30 minutes before arriving. Is there anything else, anything at all, that I can help you with today, because I'm always happy to help?",
                    concise=(VERBOSITY, POLITENESS),
                ),
            ],
        ),
    ],
    "fr": [
        (
            "vol-annule",
            "Changement de vol après une annulation",
            "Camille",
            [
                A("Bonjour, Air Horizon, Camille à l'appareil. Que puis-je faire pour vous ?"),
                U("Bonjour, mon vol pour Montréal de demain a été annulé, je voudrais être replacée sur un autre vol."),
                A(
                    "Je comprends tout à fait. Pouvez-vous me donner votre numéro de dossier (booking reference), s'il vous plaît ?",
                    speak=(GLOSS,),
                ),
                U("Oui, c'est Z K 3 4 7 Q."),
                A(
                    "Merci. Je répète : Z, K, 3, 4, 7, Q. C'est bien cela ?",
                    said="Merci. Je répète : zulu, kilo, trois, quatre, sept, québec. C'est bien cela ?",
                    tts=(LETTER_NAMES,),
                ),
                U("Oui, c'est ça."),
                T("find_booking", record_locator="ZK347Q"),
                R(
                    "find_booking",
                    passenger="Mme Élodie Marchand",
                    flight="HZ 870",
                    status="annulé",
                    alternatives=[
                        {"flight": "HZ 872", "departure": "17:00"},
                        {"flight": "HZ 874", "departure": "21:30"},
                    ],
                ),
                A(
                    "Je vous propose le vol HZ 872 demain à 17 h 00, ou le HZ 874 à 21 h 30.",
                    said="Je vous propose le vol HZ 872 demain à dix-sept cent heures, ou le HZ 874 à vingt et une heures trente.",
                    tts=(NUMBER,),
                ),
                U("Le premier, s'il vous plaît."),
                T("rebook", record_locator="ZK347Q", flight="HZ 872"),
                R("rebook", status="confirmé", seat="22A"),
                A(
                    "C'est fait : vous êtes sur le HZ 872 demain à 17 heures, siège 22A. Je vous en prie, c'est avec plaisir, et je vous souhaite un excellent voyage avec Air Horizon, n'hésitez surtout pas à nous rappeler.",
                    concise=(POLITENESS, VERBOSITY),
                ),
            ],
        ),
        (
            "carte-bloquee",
            "Carte bancaire bloquée",
            "Julien",
            [
                A("Banque Lumière, service cartes, Julien à votre écoute."),
                U("Bonjour, ma carte a été refusée trois fois ce matin, je ne comprends pas pourquoi."),
                A("Je vais regarder. Pouvez-vous m'indiquer les quatre derniers chiffres de la carte ?"),
                U("Oui, 8 8 2 0."),
                T("card_status", last4="8820"),
                R("card_status", status="bloquée", reason="trois codes erronés", holder="M. Karim Benali"),
                A(
                    "Monsieur Benali, la carte a été bloquée après trois saisies erronées du code PIN (personal identification number).",
                    speak=(GLOSS,),
                ),
                U("Ah oui, j'ai dû me tromper. On peut la débloquer ?"),
                A(
                    "Oui. Je vous envoie un SMS avec un lien sécurisé ; le code sera réactivé dans l'heure.",
                    said="Oui. Je vous envoie un esse-emme-esse avec un lien sécurisé ; le code sera réactivé dans l'heure.",
                ),
                U("Parfait, merci beaucoup."),
                A("Je vous en prie. Bonne journée, Monsieur Benali."),
            ],
        ),
        (
            "pharmacie-renouvellement",
            "Renouvellement d'ordonnance",
            "Inès",
            [
                A("Pharmacie des Tilleuls, bonjour, Inès à l'appareil."),
                U("Bonjour, je voudrais faire renouveler mon traitement pour la thyroïde, c'est du Lévothyrox 75."),
                A("Bien sûr. Votre ordonnance est-elle encore valable ? Elle doit dater de moins d'un an."),
                U("Oui, elle date de février."),
                T("check_stock", drug="Lévothyrox 75 µg", quantity=3),
                R("check_stock", available=True, ready_at="15:00"),
                A(
                    "C'est parfait. Les trois boîtes seront prêtes à 15 heures. Pensez à apporter votre carte Vitale, OK? See you later!",
                    speak=(WRONG_LANGUAGE,),
                ),
                U("D'accord, je passerai vers 16 heures."),
                A("Très bien, à tout à l'heure."),
            ],
        ),
        (
            "hotel-reservation",
            "Réservation d'hôtel",
            "Lucas",
            [
                A("Hôtel du Vieux Port, Lucas, bonjour."),
                U("Bonjour, je voudrais réserver une chambre double pour trois nuits à partir du 12 mai."),
                T("availability", room="double", check_in="2025-05-12", nights=3),
                R("availability", available=True, rate_eur=142, breakfast_eur=14),
                A(
                    "Nous avons une chambre double disponible à 142 euros la nuit, petit-déjeuner à 14 euros par personne.",
                    said="Nous avons une chambre double disponible à cent quarante-deux euros la nuit, petit-déjeuner à quatorze euros par personne.",
                ),
                U("Très bien, avec le petit-déjeuner pour deux, s'il vous plaît. Au nom de Lefèvre."),
                T("book_room", name="Lefèvre", room="double", nights=3, breakfast=2),
                R("book_room", confirmation="VP-6612"),
                A(
                    "C'est noté, Madame Lefèvre. Votre numéro de confirmation est V P 6 6 1 2.",
                    said="C'est noté, Madame Lefèvre. Votre numéro de confirmation est vee pee six six un deux.",
                    tts=(LETTER_NAMES,),
                ),
                U("Pardon ? Vous pouvez répéter ?"),
                A("Bien sûr : V, P, 6, 6, 1, 2."),
            ],
        ),
        (
            "livraison-colis",
            "Colis non livré",
            "Sarah",
            [
                A("Service client Colirapide, Sarah, bonjour."),
                U("Bonjour, mon colis devait arriver hier et le suivi n'a pas bougé depuis trois jours."),
                A("Je regarde tout de suite. Quel est le numéro de suivi ?"),
                U("C'est CR 4 0 9 1 7 7."),
                T("track_parcel", tracking="CR409177"),
                R("track_parcel", status="en attente au centre de tri", site="Lyon-Corbas"),
                A(
                    "Alors, euh, en fait, votre colis est, comment dire, toujours au centre de tri de Lyon-Corbas, voilà.",
                    concise=(FILLER,),
                ),
                U("Et il sera livré quand ?"),
                A(
                    "Il repartira demain matin ; vous serez livrée jeudi avant 13 heures.",
                    said="Il repartira demain matin ; vous serez livrée jeudi avant treize heures.",
                ),
            ],
        ),
        (
            "train-echange",
            "Échange de billet de train",
            "Thomas",
            [
                A("Rail Azur, Thomas à l'appareil, bonjour."),
                U("Bonjour, je voudrais échanger mon billet Paris–Bordeaux de vendredi pour samedi."),
                A("Pouvez-vous me donner la référence du dossier ? Elle fait six caractères."),
                U("Oui : W J 9 2 B L."),
                T("find_trip", reference="WJ92BL"),
                R("find_trip", train="TGV 8415", date="vendredi", fare="Second Flex"),
                A(
                    "Votre billet est sur le TGV 8415. Samedi, il reste de la place sur le train de 10 h 52, sans frais avec votre tarif Flex.",
                    said="Votre billet est sur le train à grande vitesse 8415. Samedi, il reste de la place sur le train de 10 h 52, sans frais avec votre tarif Flex.",
                    tts=(ACRONYM,),
                ),
                U("Parfait, je prends celui-là."),
                T("exchange", reference="WJ92BL", departure="samedi 10:52"),
                R("exchange", status="échangé", coach=14, seat=62),
                A("C'est fait : samedi 10 h 52, voiture 14, place 62."),
            ],
        ),
    ],
    "fr-CA": [
        (
            "vol-retarde",
            "Vol retardé, correspondance manquée",
            "Émilie",
            [
                A("Bonjour, Air Boréal, Émilie à l'appareil. Comment est-ce que je peux vous aider?"),
                U("Bonjour! Mon vol de Québec est en retard pis je vais manquer ma correspondance à Toronto."),
                A("Je regarde ça tout de suite. Avez-vous votre numéro de réservation?"),
                U("Oui, c'est B X 7 7 T N."),
                A(
                    "Parfait. Donc B, X, 7, 7, T, N.",
                    said="Parfait. Donc bee, ex, seven, seven, tee, en.",
                    tts=(LETTER_NAMES, WRONG_LANGUAGE),
                ),
                T("find_booking", booking="BX77TN"),
                R("find_booking", passenger="M. Gabriel Tremblay", connection="AB 214", options=["AB 218 à 19:45"]),
                A(
                    "Monsieur Tremblay, je vous ai replacé sur le vol AB 218 de 19 h 45 à Toronto. Votre siège est confirmé.",
                ),
                U("Super, merci beaucoup!"),
                A("Bienvenue! Ça me fait plaisir. Bon voyage!"),
            ],
        ),
        (
            "carte-credit",
            "Carte de crédit perdue",
            "Maxime",
            [
                A("Caisse Horizon, service des cartes, Maxime qui vous parle."),
                U("Allô, j'ai perdu ma carte de crédit hier soir au dépanneur, je veux la bloquer."),
                A("On va faire ça ensemble. Pouvez-vous me confirmer votre date de naissance et votre code postal?"),
                U("Le 14 juin 1979, et mon code postal c'est G 1 R 4 P 5."),
                T("verify_member", dob="1979-06-14", postal_code="G1R 4P5"),
                R("verify_member", verified=True, member="Nathalie Gagnon"),
                A(
                    "Merci, Madame Gagnon. Je bloque la carte maintenant et je vous en commande une nouvelle avec un nouveau NIP (PIN).",
                    speak=(GLOSS,),
                ),
                T("block_card", member="Nathalie Gagnon", reason="perdue"),
                R("block_card", status="bloquée", delivery_days=7),
                A(
                    "C'est fait. Vous allez recevoir la nouvelle carte par la poste d'ici sept jours ouvrables.",
                    said="C'est fait. Vous allez recevoir la nouvelle carte par la poste d'ici sept jours ouvrables.",
                ),
                U("Parfait, merci."),
                A(
                    "Ça me fait plaisir, Madame Gagnon, vraiment, c'est toujours un plaisir de vous servir et n'hésitez jamais à nous rappeler, on est là pour vous, bonne soirée, au revoir!",
                    concise=(POLITENESS, VERBOSITY),
                ),
            ],
        ),
        (
            "pharmacie",
            "Renouvellement en pharmacie",
            "Sophie",
            [
                A("Pharmacie du boulevard Laurier, Sophie, bonjour."),
                U("Bonjour, j'aimerais renouveler ma prescription d'inhalateur, s'il vous plaît."),
                T("find_prescription", patient_phone="418-555-0142"),
                R("find_prescription", drug="Ventolin HFA 100 mcg", renewals_left=1),
                A(
                    "Je vois votre Ventolin, 100 mcg. Il vous reste un renouvellement.",
                    said="Je vois votre Ventolin, cent em-cé-gé. Il vous reste un renouvellement.",
                    tts=(ACRONYM,),
                ),
                U("Ça va être prêt quand?"),
                A("Ça va être prêt dans une heure. Vous pouvez passer n'importe quand avant 21 h."),
                U("Merci!"),
                A("Bienvenue, bonne journée!"),
            ],
        ),
        (
            "internet-panne",
            "Panne d'Internet",
            "Olivier",
            [
                A("Télécâble Nordik, soutien technique, Olivier. Qu'est-ce qui se passe avec votre service?"),
                U("Mon Internet coupe aux dix minutes depuis hier, pis je travaille de la maison."),
                T("line_diagnostic", account="7730-1184"),
                R(
                    "line_diagnostic",
                    signal="faible",
                    modem_restart_recommended=True,
                    technician_slots=["jeudi 8h-12h"],
                ),
                A(
                    "Le signal sur votre ligne est faible. Premièrement, débranchez le modem trente secondes. Si ça coupe encore, un technicien peut passer jeudi entre 8 h et midi.",
                ),
                U("Je l'ai déjà redémarré deux fois. Envoyez le technicien."),
                T("book_technician", account="7730-1184", slot="jeudi 8h-12h"),
                R("book_technician", status="confirmé"),
                A(
                    "C'est réservé pour jeudi entre 8 h et midi. Le technicien va vous appeler trente minutes avant, so just keep your phone close.",
                    speak=(WRONG_LANGUAGE,),
                ),
            ],
        ),
        (
            "hotel-ski",
            "Réservation d'hôtel pour le ski",
            "Alexandre",
            [
                A("Auberge du Mont-Sainte-Anne, Alexandre, bonjour!"),
                U("Bonjour, avez-vous une chambre pour deux adultes et deux enfants, du 7 au 9 février?"),
                T("availability", guests=4, check_in="2025-02-07", check_out="2025-02-09"),
                R("availability", room="familiale", rate_cad=229, ski_package=True),
                A(
                    "Oui, il nous reste une chambre familiale à 229 $ la nuit, et on offre un forfait avec les billets de ski.",
                    said="Oui, il nous reste une chambre familiale à deux cent vingt-neuf dollars la nuit, et on offre un forfait avec les billets de ski.",
                ),
                U("Parfait, on prend le forfait. C'est au nom de Côté."),
                T("book_room", name="Côté", package="ski"),
                R("book_room", confirmation="MSA-4471"),
                A(
                    "C'est confirmé, Monsieur Côté. Je vous envoie la confirmation par courriel (e-mail).",
                    speak=(GLOSS,),
                ),
            ],
        ),
        (
            "colis-postes",
            "Colis en retard",
            "Jessica",
            [
                A("Postes Express, Jessica, bonjour."),
                U("Allô, j'attends un colis depuis deux semaines, le numéro de suivi c'est P E 5 5 2 1 9 C A."),
                T("track_parcel", tracking="PE55219CA"),
                R("track_parcel", status="retenu aux douanes", since_days=9),
                A(
                    "Votre colis est retenu aux douanes depuis neuf jours. Ça arrive pour les envois qui viennent des États-Unis.",
                ),
                U("Est-ce que je dois faire quelque chose?"),
                A(
                    "Non, vous n'avez rien à faire. Si des frais sont à payer, vous allez recevoir un avis.",
                    said="Non, vous n'avez rien à faire. Si des frais sont à payer, vous allez recevoir un",
                    tts=(TRUNCATION,),
                ),
                U("Un quoi? Ça a coupé."),
                A("Un avis, par la poste ou par courriel. Désolée pour ça."),
            ],
        ),
    ],
    "es": [
        (
            "vuelo-cancelado",
            "Cambio de vuelo por cancelación",
            "Lucía",
            [
                A("Aerolíneas Solara, le atiende Lucía. ¿En qué puedo ayudarle?"),
                U("Hola, me han cancelado el vuelo a Sevilla de esta tarde y necesito otro."),
                A("Lo siento mucho. ¿Me puede dar su localizador (booking reference)?", speak=(GLOSS,)),
                U("Sí, es H T 5 9 K W."),
                A(
                    "Gracias. H, T, 5, 9, K, W, ¿correcto?",
                    said="Gracias. eitch, tee, cinco, nueve, kay, double-u, ¿correcto?",
                    tts=(LETTER_NAMES,),
                ),
                U("Correcto."),
                T("find_booking", locator="HT59KW"),
                R(
                    "find_booking",
                    passenger="Sr. Andrés Molina",
                    options=["SO 3120 a las 17:00", "SO 3124 a las 20:15"],
                ),
                A(
                    "Señor Molina, puedo pasarle al vuelo SO 3120 a las 17:00 o al SO 3124 a las 20:15.",
                    said="Señor Molina, puedo pasarle al vuelo SO 3120 a las mil setecientas o al SO 3124 a las veinte quince.",
                    tts=(NUMBER,),
                ),
                U("El de las cinco, por favor."),
                T("rebook", locator="HT59KW", flight="SO 3120"),
                R("rebook", status="confirmado", seat="9F"),
                A("Listo, vuelo SO 3120 a las cinco de la tarde, asiento 9F."),
            ],
        ),
        (
            "tarjeta-robada",
            "Tarjeta robada",
            "Javier",
            [
                A("Banco Meridiano, tarjetas, le atiende Javier."),
                U("Buenas, me han robado la cartera en el metro y quiero cancelar la tarjeta."),
                A("Vamos a bloquearla ahora mismo. ¿Me confirma su DNI, por favor?"),
                U("Sí, 4 7 2 9 1 8 3 5 L."),
                T("verify_customer", dni="47291835L"),
                R("verify_customer", verified=True, name="Carmen Ruiz", cards=["débito ****3310"]),
                A(
                    "Gracias, señora Ruiz. Bloqueo ya la tarjeta de débito que termina en 3310.",
                    said="Gracias, señora Ruiz. Bloqueo ya la tarjeta de débito que termina en tres mil trescientos diez.",
                    tts=(NUMBER,),
                ),
                T("block_card", card="****3310"),
                R("block_card", status="bloqueada", new_card_days=4),
                A(
                    "Hecho. Recibirá la nueva tarjeta en cuatro días hábiles. Le recomiendo también poner la denuncia en comisaría.",
                ),
                U("Vale, muchas gracias."),
                A(
                    "Con mucho gusto, señora Ruiz, para servirle, ha sido un placer atenderle, que tenga un excelente día y cualquier cosa aquí estamos.",
                    concise=(POLITENESS, VERBOSITY),
                ),
            ],
        ),
        (
            "farmacia-receta",
            "Receta electrónica",
            "Marta",
            [
                A("Farmacia Central, buenos días, soy Marta."),
                U("Hola, quería saber si tienen el Omeprazol de 20 que me ha recetado el médico."),
                T("check_stock", drug="Omeprazol 20 mg", quantity=1),
                R("check_stock", available=True),
                A(
                    "Sí, lo tenemos. Con la tarjeta sanitaria le dispensamos la receta electrónica directamente, don't worry.",
                    speak=(WRONG_LANGUAGE,),
                ),
                U("¿Y puede recogerlo mi hijo?"),
                A(
                    "Sí, con su tarjeta sanitaria es suficiente.",
                ),
                U("Perfecto, gracias."),
                A("A usted. Hasta luego."),
            ],
        ),
        (
            "hotel-reserva",
            "Reserva de hotel",
            "Diego",
            [
                A("Hotel Alameda, buenas tardes, le atiende Diego."),
                U("Buenas, quería una habitación doble para el puente de mayo, del 1 al 4."),
                T("availability", room="doble", check_in="2025-05-01", nights=3),
                R("availability", available=True, rate_eur=118),
                A(
                    "Tenemos habitación doble a 118 euros la noche, con desayuno incluido.",
                    said="Tenemos habitación doble a ciento dieciocho euros la noche, con desayuno incluido.",
                ),
                U("Estupendo. A nombre de Iñaki Etxeberria."),
                T("book_room", name="Iñaki Etxeberria", nights=3),
                R("book_room", confirmation="AL-8803"),
                A(
                    "Reservado, señor Etxeberria. Su código de confirmación es AL 8803.",
                    said="Reservado, señor Echeverría. Su código de confirmación es AL 8803.",
                    tts=(ENTITY,),
                ),
                U("Es Etxeberria, con t-x."),
                A("Disculpe, queda anotado Etxeberria, con t-x."),
            ],
        ),
        (
            "paquete-entrega",
            "Entrega de paquete",
            "Paula",
            [
                A("Envíos Rayo, atención al cliente, Paula."),
                U("Hola, el repartidor dice que no estaba en casa, pero estuve toda la mañana."),
                A("Vaya, lo siento. ¿Me da el número de envío?"),
                U("ER 2 0 0 5 8 1 4."),
                T("track_parcel", tracking="ER2005814"),
                R("track_parcel", status="ausente", next_attempt="mañana 9-14"),
                A(
                    "Pues, bueno, o sea, el sistema dice que, este, habrá un segundo intento mañana, eh, entre las 9 y las 14.",
                    concise=(FILLER,),
                ),
                U("¿Y si tampoco me pilla?"),
                A("Puede recogerlo en el punto Rayo de su barrio durante siete días."),
            ],
        ),
        (
            "internet-averia",
            "Avería de fibra",
            "Sergio",
            [
                A("Fibranet, soporte técnico, Sergio al habla."),
                U("Hola, no tengo internet desde ayer, la luz LOS del router está en rojo."),
                T("line_diagnostic", line="FN-55310"),
                R("line_diagnostic", fault="corte de fibra", eta_hours=24),
                A(
                    "La luz LOS en rojo indica un corte de fibra. Hay una avería en su zona; estará resuelta en unas 24 horas.",
                    said="La luz Loss of Signal en rojo indica un corte de fibra. Hay una avería en su zona; estará resuelta en unas 24 horas.",
                    tts=(ACRONYM, WRONG_LANGUAGE),
                ),
                U("¿Me lo van a descontar de la factura?"),
                A("Sí, se le abonará automáticamente el día sin servicio en la próxima factura."),
            ],
        ),
    ],
    "de": [
        (
            "flug-umbuchung",
            "Flugumbuchung nach Annullierung",
            "Lena",
            [
                A("Guten Tag, Alpenflug, Sie sprechen mit Lena. Wie kann ich helfen?"),
                U("Hallo, mein Flug nach Hamburg heute Abend wurde gestrichen. Ich brauche eine Alternative."),
                A("Das tut mir leid. Nennen Sie mir bitte Ihre Buchungsnummer (booking reference).", speak=(GLOSS,)),
                U("Z K 3 8 P D."),
                A(
                    "Danke. Z, K, 3, 8, P, D, richtig?",
                    said="Danke. zee, kay, three, acht, pee, dee, richtig?",
                    tts=(LETTER_NAMES, WRONG_LANGUAGE),
                ),
                U("Ja, genau."),
                T("find_booking", booking="ZK38PD"),
                R("find_booking", passenger="Herr Jonas Weber", options=["AF 1700 um 17:00", "AF 1712 um 20:40"]),
                A(
                    "Herr Weber, ich kann Sie auf den Flug AF 1700 um 17:00 Uhr oder AF 1712 um 20:40 Uhr umbuchen.",
                    said="Herr Weber, ich kann Sie auf den Flug AF siebzehnhundert um siebzehnhundert Uhr oder AF 1712 um 20:40 Uhr umbuchen.",
                    tts=(NUMBER,),
                ),
                U("Den um fünf, bitte."),
                T("rebook", booking="ZK38PD", flight="AF 1700"),
                R("rebook", status="bestätigt", seat="11A"),
                A("Erledigt: Flug AF 1700 um 17 Uhr, Sitzplatz 11A."),
            ],
        ),
        (
            "karte-gesperrt",
            "Gesperrte Girocard",
            "Felix",
            [
                A("Nordbank Kartenservice, mein Name ist Felix."),
                U("Guten Morgen, meine Girocard wird seit gestern überall abgelehnt."),
                A("Ich schaue nach. Wie lautet Ihre IBAN?"),
                U("DE 89 3704 0044 0532 0130 00."),
                T("card_status", iban="DE89370400440532013000"),
                R("card_status", status="gesperrt", reason="Sicherheitsprüfung", holder="Frau Anke Schulz"),
                A(
                    "Frau Schulz, Ihre Karte wurde zur Sicherheitsprüfung gesperrt, weil eine ungewöhnliche Zahlung aus dem Ausland versucht wurde.",
                ),
                U("Das war ich nicht. Kann ich eine neue bekommen?"),
                T("replace_card", iban="DE89370400440532013000"),
                R("replace_card", status="bestellt", days=5),
                A(
                    "Ja. Die neue Karte ist bestellt und kommt in etwa fünf Werktagen. Die neue PIN kommt separat per Post.",
                    said="Ja. Die neue Karte ist bestellt und kommt in etwa fünf Werktagen. Die neue Persönliche Identifikationsnummer kommt separat per Post.",
                    tts=(ACRONYM,),
                ),
                U("Gut, danke."),
                A(
                    "Sehr gerne, Frau Schulz, dafür nicht, es war mir wirklich eine große Freude, Ihnen heute behilflich sein zu dürfen.",
                    concise=(POLITENESS, VERBOSITY),
                ),
            ],
        ),
        (
            "apotheke-rezept",
            "E-Rezept in der Apotheke",
            "Miriam",
            [
                A("Linden-Apotheke, guten Tag, hier ist Miriam."),
                U("Hallo, ich habe ein E-Rezept für Ramipril 5 Milligramm. Haben Sie das vorrätig?"),
                T("check_stock", drug="Ramipril 5 mg", pack="N3"),
                R("check_stock", available=False, delivery="heute 14:30"),
                A(
                    "Wir haben es gerade nicht da, aber der Großhandel liefert heute um 14:30 Uhr.",
                    said="Wir haben es gerade nicht da, aber der Großhandel liefert heute um vierzehn Uhr dreißig.",
                ),
                U("Dann komme ich nach drei vorbei."),
                A(
                    "Ja, also, ähm, bringen Sie einfach, sozusagen, Ihre Gesundheitskarte mit, genau.",
                    concise=(FILLER,),
                ),
                U("Mache ich, danke."),
                A("Bis später!"),
            ],
        ),
        (
            "bahn-verspaetung",
            "Zugverspätung und Anschluss",
            "Tobias",
            [
                A("Reiseservice, Tobias am Apparat. Worum geht es?"),
                U("Mein ICE nach München hat 50 Minuten Verspätung, ich verpasse meinen Anschluss nach Salzburg."),
                T("find_connection", train="ICE 598", destination="Salzburg"),
                R("find_connection", next="RJX 65 um 18:27", ticket_valid=True),
                A(
                    "Ihr Ticket bleibt gültig. Mit dem ICE 598 erreichen Sie in München den RJX 65 um 18:27 Uhr.",
                    said="Ihr Ticket bleibt gültig. Mit dem Eis 598 erreichen Sie in München den RJX 65 um 18:27 Uhr.",
                    tts=(ACRONYM, ENTITY),
                ),
                U("Den was? Eis?"),
                A("Entschuldigung: den I-C-E 598. In München steigen Sie in den Railjet Express 65 nach Salzburg um."),
                U("Und bekomme ich Geld zurück?"),
                A("Ab 60 Minuten Verspätung am Ziel bekommen Sie 25 Prozent des Fahrpreises zurück."),
            ],
        ),
        (
            "hotel-buchung",
            "Hotelbuchung",
            "Katharina",
            [
                A("Hotel am Stadtpark, Katharina, guten Abend."),
                U("Guten Abend, ich bräuchte ein Einzelzimmer von Montag bis Donnerstag."),
                T("availability", room="Einzelzimmer", nights=3),
                R("availability", available=True, rate_eur=96),
                A("Das geht. Ein Einzelzimmer kostet 96 Euro pro Nacht inklusive Frühstück."),
                U("Gut, bitte auf den Namen Özdemir buchen."),
                T("book_room", name="Özdemir", nights=3),
                R("book_room", confirmation="SP-1204"),
                A(
                    "Gebucht, Herr Özdemir. Ihre Buchungsnummer ist SP 1204. Check-in ist ab 15 Uhr, let me know if you need anything else.",
                    speak=(WRONG_LANGUAGE,),
                ),
            ],
        ),
        (
            "paket-zustellung",
            "Paket beim Nachbarn",
            "Jana",
            [
                A("Paketblitz Kundenservice, Jana, hallo."),
                U("Hallo, laut Sendungsverfolgung wurde mein Paket zugestellt, aber ich habe nichts bekommen."),
                A("Ich prüfe das. Nennen Sie mir bitte die Sendungsnummer."),
                U("PB 6 6 0 4 1 2 9."),
                T("track_parcel", tracking="PB6604129"),
                R("track_parcel", status="beim Nachbarn abgegeben", neighbour="Familie Krüger, Hausnummer 12"),
                A(
                    "Das Paket wurde bei Familie Krüger in Hausnummer 12 abgegeben.",
                    said="Das Paket wurde bei Familie Krüger in Hausnummer zwölf abgegeben.",
                ),
                U("Ah, super, dann gehe ich gleich rüber."),
                A("Gerne. Einen schönen Tag noch!"),
            ],
        ),
    ],
    "it": [
        (
            "volo-cancellato",
            "Riprotezione dopo un volo cancellato",
            "Giulia",
            [
                A("Buongiorno, Aeroblu, sono Giulia. Come posso aiutarla?"),
                U("Salve, il mio volo per Catania di stasera è stato cancellato, ho bisogno di un'alternativa."),
                A(
                    "Mi dispiace molto. Mi può dare il suo codice di prenotazione (booking code)?",
                    speak=(GLOSS,),
                ),
                U("Sì: Z K 3 R 8 V."),
                A(
                    "Grazie. Z, K, 3, R, 8, V, giusto?",
                    said="Grazie. zed, kei, tri, ar, eit, vi, giusto?",
                    tts=(LETTER_NAMES, WRONG_LANGUAGE),
                ),
                U("Sì, giusto."),
                T("find_booking", pnr="ZK3R8V"),
                R("find_booking", passenger="Sig. Matteo Russo", options=["AB 1700 alle 17:00", "AB 1742 alle 21:10"]),
                A(
                    "Signor Russo, posso spostarla sul volo delle 17:00 o su quello delle 21:10.",
                    said="Signor Russo, posso spostarla sul volo delle millesettecento o su quello delle ventuno e dieci.",
                    tts=(NUMBER,),
                ),
                U("Quello delle cinque, grazie."),
                T("rebook", pnr="ZK3R8V", flight="AB 1700"),
                R("rebook", status="confermato", seat="7C"),
                A(
                    "Fatto: volo delle 17, posto 7C. Si figuri, è stato un piacere, le auguro davvero buon viaggio e una splendida serata.",
                    concise=(POLITENESS, VERBOSITY),
                ),
            ],
        ),
        (
            "carta-clonata",
            "Carta di credito clonata",
            "Marco",
            [
                A("Banca Adriatica, servizio carte, sono Marco."),
                U("Buonasera, mi sono arrivati due SMS di pagamenti a Londra, ma io sono a Bologna."),
                A("Blocchiamo subito la carta. Mi conferma il suo codice fiscale?"),
                U("RSS MRA 80 A41 A944 K."),
                T("verify_customer", codice_fiscale="RSSMRA80A41A944K"),
                R("verify_customer", verified=True, name="Maria Rossi", suspicious=[{"amount_gbp": 312.5}]),
                A(
                    "Grazie, signora Rossi. Vedo un addebito di 312,50 sterline. Blocco la carta e apro il disconoscimento.",
                    said="Grazie, signora Rossi. Vedo un addebito di trecentododici virgola cinquanta sterline. Blocco la carta e apro il disconoscimento.",
                ),
                T("block_card", customer="Maria Rossi"),
                R("block_card", status="bloccata"),
                A(
                    "La carta è bloccata. La nuova arriverà in filiale entro una settimana.",
                ),
                U("Grazie mille."),
                A("Di niente, buona serata."),
            ],
        ),
        (
            "farmacia-ricetta",
            "Ricetta elettronica",
            "Chiara",
            [
                A("Farmacia San Marco, buongiorno, sono Chiara."),
                U("Buongiorno, ho la ricetta dematerializzata per la Cardioaspirina. Me la preparate?"),
                A("Certo. Mi legge il numero NRE della ricetta?"),
                U("0 8 0 A 4 1 2 3 4 5 6 7 8 9 0."),
                T("load_prescription", nre="080A41234567890"),
                R("load_prescription", drug="Cardioaspirina 100 mg", boxes=2),
                A(
                    "Ho trovato la ricetta: due confezioni di Cardioaspirina da 100 mg. Sono pronte fra mezz'ora.",
                    said="Ho trovato la ricetta: due confezioni di Cardioaspirina da cento emme gi. Sono pronte fra mezz'ora.",
                    tts=(ACRONYM,),
                ),
                U("Perfetto, passo dopo pranzo."),
                A("Va bene, la aspettiamo. Porti la tessera sanitaria."),
            ],
        ),
        (
            "hotel-prenotazione",
            "Prenotazione in hotel",
            "Luca",
            [
                A("Hotel Belvedere, buonasera, sono Luca."),
                U("Buonasera, vorrei una camera matrimoniale per il fine settimana del 21 giugno."),
                T("availability", room="matrimoniale", check_in="2025-06-21", nights=2),
                R("availability", available=True, rate_eur=160, sea_view=True),
                A(
                    "Abbiamo una matrimoniale vista mare a 160 euro a notte, colazione inclusa.",
                    said="Abbiamo una matrimoniale vista mare a centosessanta euro a notte, colazione inclusa.",
                ),
                U("Benissimo. A nome Esposito."),
                T("book_room", name="Esposito", nights=2),
                R("book_room", confirmation="BV-3390"),
                A(
                    "Allora, cioè, praticamente, le confermo la prenotazione, ecco, il codice è BV 3390, diciamo.",
                    concise=(FILLER,),
                ),
            ],
        ),
        (
            "internet-guasto",
            "Guasto della linea",
            "Francesca",
            [
                A("Linkasa assistenza tecnica, sono Francesca."),
                U("Salve, la connessione va e viene da tre giorni, il modem si riavvia da solo."),
                T("line_diagnostic", line="LK-44120"),
                R("line_diagnostic", fault="modem difettoso", replacement=True),
                A(
                    "Dalla diagnosi risulta un modem difettoso. Le spediamo un modem nuovo gratuitamente, arriva in 48 ore.",
                    said="Dalla diagnosi risulta un modem difettoso. Le spediamo un modem nuovo gratuitamente, arriva in 48 ore.",
                ),
                U("E quello vecchio?"),
                A(
                    "Lo restituisce al corriere quando le consegna quello nuovo, no problem.",
                    speak=(WRONG_LANGUAGE,),
                ),
            ],
        ),
        (
            "pacco-consegna",
            "Consegna di un pacco",
            "Alessandro",
            [
                A("Pacchi Veloci, servizio clienti, Alessandro."),
                U("Buongiorno, aspetto un pacco da una settimana. Il codice è PV 9 0 3 3 1 7."),
                T("track_parcel", tracking="PV903317"),
                R("track_parcel", status="in consegna", window="oggi 14-18"),
                A(
                    "Il pacco è in consegna oggi, tra le 14 e le 18.",
                    said="Il pacco è in consegna oggi, tra le",
                    tts=(TRUNCATION,),
                ),
                U("Scusi, non ho sentito l'orario."),
                A("Tra le 14 e le 18, oggi pomeriggio."),
            ],
        ),
    ],
    "hi": [
        (
            "udaan-radd",
            "रद्द उड़ान के बाद नई बुकिंग",
            "प्रिया",
            [
                A("नमस्ते, नीलगगन एयरलाइंस, मैं प्रिया बोल रही हूँ। मैं आपकी क्या मदद कर सकती हूँ?"),
                U("नमस्ते, आज शाम की मेरी दिल्ली से पुणे की फ़्लाइट रद्द हो गई है। मुझे दूसरी फ़्लाइट चाहिए।"),
                A("असुविधा के लिए खेद है। कृपया अपना बुकिंग संदर्भ (booking reference) बताइए।", speak=(GLOSS,)),
                U("जी, K 7 P 2 M X।"),
                T("find_booking", pnr="K7P2MX"),
                R("find_booking", passenger="श्री राहुल वर्मा", options=["NG 615 at 20:30", "NG 221 at 06:15"]),
                A(
                    "राहुल जी, मैं आपको आज रात 8:30 बजे की NG 615 या कल सुबह 6:15 बजे की NG 221 पर भेज सकती हूँ।",
                    said="राहुल जी, मैं आपको आज रात आठ तीस बजे की NG 615 या कल सुबह छह पंद्रह बजे की NG 221 पर भेज सकती हूँ।",
                    tts=(NUMBER,),
                ),
                U("आज रात वाली कर दीजिए।"),
                T("rebook", pnr="K7P2MX", flight="NG 615"),
                R("rebook", status="confirmed", seat="18B"),
                A(
                    "हो गया। आपकी सीट 18B है। Please reach the airport two hours before departure.",
                    speak=(WRONG_LANGUAGE,),
                ),
            ],
        ),
        (
            "card-block",
            "खोया हुआ डेबिट कार्ड",
            "अमित",
            [
                A("सुरक्षा बैंक कार्ड सेवा, मैं अमित। बताइए क्या मदद करूँ?"),
                U("मेरा डेबिट कार्ड कहीं गिर गया है, उसे तुरंत बंद करवाना है।"),
                A("जी, अभी करते हैं। कार्ड के आख़िरी चार अंक और अपनी जन्मतिथि बताइए।"),
                U("आख़िरी चार अंक 5 0 9 3, और जन्मतिथि 12 अगस्त 1990।"),
                T("verify_customer", last4="5093", dob="1990-08-12"),
                R("verify_customer", verified=True, name="सुनीता शर्मा", balance_inr=150000),
                A(
                    "धन्यवाद सुनीता जी। आपका कार्ड अभी ब्लॉक कर रहा हूँ। आपके खाते में ₹1,50,000 सुरक्षित हैं।",
                    said="धन्यवाद सुनीता जी। आपका कार्ड अभी ब्लॉक कर रहा हूँ। आपके खाते में एक सौ पचास हज़ार रुपये सुरक्षित हैं।",
                    tts=(NUMBER,),
                ),
                T("block_card", last4="5093"),
                R("block_card", status="blocked", new_card_days=7),
                A("कार्ड बंद हो गया है। नया कार्ड सात दिन में आपके पते पर पहुँच जाएगा।"),
                U("ठीक है, शुक्रिया।"),
                A(
                    "आपका बहुत-बहुत धन्यवाद, सुनीता जी, हम आपकी सेवा में सदैव तत्पर हैं, आपका दिन मंगलमय हो, सुरक्षा बैंक चुनने के लिए हार्दिक आभार।",
                    concise=(POLITENESS, VERBOSITY),
                ),
            ],
        ),
        (
            "dawa-refill",
            "दवा दोबारा मँगवाना",
            "नेहा",
            [
                A("आरोग्य फ़ार्मेसी, नमस्ते, मैं नेहा बोल रही हूँ।"),
                U("नमस्ते, मुझे अपनी शुगर की दवा फिर से मँगवानी है, मेटफ़ॉर्मिन 500।"),
                T("check_stock", drug="Metformin 500 mg", strips=3),
                R("check_stock", available=True, delivery="आज शाम 5 बजे तक"),
                A(
                    "जी, मेटफ़ॉर्मिन 500 mg उपलब्ध है। तीन पत्ते आज शाम 5 बजे तक घर पहुँच जाएँगे।",
                    said="जी, मेटफ़ॉर्मिन 500 मिलीग्राम उपलब्ध है। तीन पत्ते आज शाम पाँच बजे तक घर पहुँच जाएँगे।",
                ),
                U("पर्चा भेजना पड़ेगा क्या?"),
                A(
                    "हाँ, तो, मतलब, वो क्या है कि, पर्चे की फ़ोटो व्हाट्सऐप पर भेज दीजिए, बस।",
                    concise=(FILLER,),
                ),
                U("ठीक है, भेज देता हूँ।"),
                A("धन्यवाद, फ़ोटो मिलते ही ऑर्डर पक्का कर देंगे।"),
            ],
        ),
        (
            "hotel-booking",
            "होटल बुकिंग",
            "रोहन",
            [
                A("होटल राजमहल, जयपुर, मैं रोहन बोल रहा हूँ।"),
                U("नमस्ते, अगले शुक्रवार से दो रातों के लिए एक डबल रूम चाहिए।"),
                T("availability", room="double", nights=2),
                R("availability", available=True, rate_inr=4500),
                A(
                    "जी, डबल रूम ₹4,500 प्रति रात में उपलब्ध है, नाश्ता शामिल है।",
                    said="जी, डबल रूम चार हज़ार पाँच सौ रुपये प्रति रात में उपलब्ध है, नाश्ता शामिल है।",
                ),
                U("ठीक है, बुक कर दीजिए। नाम है अनुराग त्रिपाठी।"),
                T("book_room", name="अनुराग त्रिपाठी", nights=2),
                R("book_room", confirmation="RM-7781"),
                A(
                    "बुकिंग हो गई है, अनुराग जी। आपका कन्फ़र्मेशन नंबर R M 7 7 8 1 है।",
                    said="बुकिंग हो गई है, अनुराग जी। आपका कन्फ़र्मेशन नंबर रोमियो माइक सात सात आठ एक है।",
                    tts=(LETTER_NAMES,),
                ),
            ],
        ),
        (
            "broadband-kharab",
            "ब्रॉडबैंड ख़राब",
            "काव्या",
            [
                A("तेज़नेट ब्रॉडबैंड सहायता, मैं काव्या। आपकी क्या समस्या है?"),
                U("कल रात से इंटरनेट बिल्कुल नहीं चल रहा। राउटर पर लाल बत्ती जल रही है।"),
                T("line_diagnostic", account="TN-30419"),
                R("line_diagnostic", fault="fibre cut", eta="कल दोपहर 2:30"),
                A(
                    "आपके इलाक़े में फ़ाइबर कट गया है। कल दोपहर 2:30 बजे तक ठीक हो जाएगा।",
                    said="आपके इलाक़े में फ़ाइबर कट गया है। कल दोपहर दो तीस बजे तक ठीक हो जाएगा।",
                    tts=(NUMBER,),
                ),
                U("इतनी देर? मेरा काम रुक जाएगा।"),
                A("मैं समझती हूँ। तब तक के लिए आपके नंबर पर 20 GB मुफ़्त मोबाइल डेटा भेज रही हूँ।"),
            ],
        ),
        (
            "parcel-delivery",
            "पार्सल डिलीवरी",
            "विकास",
            [
                A("फ़टाफ़ट कूरियर, नमस्ते, मैं विकास।"),
                U("नमस्ते, मेरा पार्सल तीन दिन से 'out for delivery' दिखा रहा है।"),
                A("मैं देखता हूँ। ट्रैकिंग नंबर बताइए।"),
                U("FF 8 8 1 2 0 4।"),
                T("track_parcel", tracking="FF881204"),
                R("track_parcel", status="address not found", hub="लखनऊ"),
                A("ड्राइवर को आपका पता नहीं मिल पाया। कृपया पास का कोई लैंडमार्क बता दीजिए।"),
                U("हनुमान मंदिर के सामने वाली गली, तीसरा मकान।"),
                A(
                    "नोट कर लिया। पार्सल कल पहुँच जाएगा।",
                    said="नोट कर लिया। पार्सल कल",
                    tts=(TRUNCATION,),
                ),
            ],
        ),
    ],
    "ja": [
        (
            "bin-henkou",
            "欠航後の便の変更",
            "佐藤",
            [
                A("お電話ありがとうございます。さくら航空、佐藤でございます。"),
                U("もしもし、今日の夕方の札幌行きが欠航になったので、振り替えをお願いしたいんですが。"),
                A(
                    "ご迷惑をおかけして申し訳ございません。予約番号（booking reference）をお願いいたします。",
                    speak=(GLOSS,),
                ),
                U("ZK3の、4、7、Qです。"),
                A(
                    "ありがとうございます。Z、K、3、4、7、Qですね。",
                    said="ありがとうございます。ゼット、ケー、スリー、フォー、セブン、キューですね。",
                    tts=(LETTER_NAMES, WRONG_LANGUAGE),
                ),
                T("find_booking", booking="ZK347Q"),
                R("find_booking", passenger="山田 花子 様", options=["SK 517 17:00", "SK 521 19:30"]),
                A(
                    "山田様、17時発の517便、または19時30分発の521便にお振り替えできます。",
                    said="山田様、じゅうななじ発のごひゃくじゅうなな便、またはじゅうくじさんじゅっぷん発のごひゃくにじゅういち便にお振り替えできます。",
                ),
                U("17時の便でお願いします。"),
                T("rebook", booking="ZK347Q", flight="SK 517"),
                R("rebook", status="confirmed", seat="23K"),
                A(
                    "かしこまりました。誠に恐れ入りますが、お手続きが完了いたしましたことをご報告させていただきます。お座席は23Kでございます。誠にありがとうございました。",
                    concise=(POLITENESS, VERBOSITY),
                ),
            ],
        ),
        (
            "card-teishi",
            "クレジットカードの利用停止",
            "鈴木",
            [
                A("はい、あおばカードセンター、鈴木でございます。"),
                U("カードを財布ごと落としてしまって、すぐに止めてほしいんです。"),
                A("承知しました。ご本人確認のため、生年月日とご登録の電話番号をお願いいたします。"),
                U("1985年4月2日、電話は090の1234の5678です。"),
                T("verify_member", dob="1985-04-02", phone="090-1234-5678"),
                R("verify_member", verified=True, name="田中 健一"),
                A("田中様、確認できました。ただいまカードのご利用を停止いたします。"),
                T("block_card", member="田中 健一"),
                R("block_card", status="stopped", reissue_days=10),
                A(
                    "停止いたしました。新しいカードは10日ほどでお届けします。",
                    said="停止いたしました。新しいカードはじゅうにちほどでお届けします。",
                    tts=(NUMBER,),
                ),
                U("ありがとうございます。"),
                A("どういたしまして。お気をつけてお過ごしください。"),
            ],
        ),
        (
            "kusuri",
            "処方薬の受け取り",
            "高橋",
            [
                A("みどり薬局、高橋です。"),
                U("すみません、いつもの血圧の薬、今日取りに行けますか。"),
                T("check_stock", drug="アムロジピン 5mg", quantity=28),
                R("check_stock", available=True, ready_at="15:00"),
                A(
                    "はい、アムロジピン5mgを28錠、15時までにご用意いたします。",
                    said="はい、アムロジピン5ミリグラムをにじゅうはちじょう、じゅうごじまでにご用意いたします。",
                ),
                U("お薬手帳は必要ですか。"),
                A(
                    "えーと、あの、そうですね、一応、お薬手帳をお持ちいただければ、まあ、大丈夫です。",
                    concise=(FILLER,),
                ),
                U("わかりました。"),
                A("お待ちしております。"),
            ],
        ),
        (
            "hotel-yoyaku",
            "ホテルの予約",
            "中村",
            [
                A("お電話ありがとうございます。ホテル湖畔亭、中村でございます。"),
                U("来月の10日から2泊、大人2名で予約したいのですが。"),
                T("availability", check_in="2025-07-10", nights=2, adults=2),
                R("availability", available=True, room="和室", rate_jpy=28000),
                A(
                    "10日から2泊、大人2名様、和室でご用意できます。1泊28,000円でございます。",
                    said="とおかから2泊、大人にめいさま、和室でご用意できます。いちはく28,000円でございます。",
                    tts=(NUMBER,),
                ),
                U("それでお願いします。名前は小林です。"),
                T("book_room", name="小林", nights=2),
                R("book_room", confirmation="KH-2208"),
                A("小林様、ご予約を承りました。予約番号はKH2208でございます。"),
            ],
        ),
        (
            "takuhai",
            "宅配便の再配達",
            "伊藤",
            [
                A("はやて運輸、再配達受付の伊藤です。"),
                U("不在票が入っていたので、再配達をお願いしたいです。伝票番号は4410の2278の9031です。"),
                T("track_parcel", tracking="441022789031"),
                R("track_parcel", status="持ち戻り", slots=["今日 18-20時", "明日 午前中"]),
                A("本日18時から20時、または明日の午前中でお届けできます。"),
                U("今日の夜でお願いします。"),
                T("schedule_redelivery", tracking="441022789031", slot="今日 18-20時"),
                R("schedule_redelivery", status="scheduled"),
                A(
                    "本日18時から20時でお届けします。Thank you for waiting.",
                    speak=(WRONG_LANGUAGE,),
                ),
            ],
        ),
        (
            "net-koshou",
            "インターネットの故障",
            "渡辺",
            [
                A("ひかりネットサポート、渡辺でございます。"),
                U("昨日の夜からネットがつながらないんです。ONUのランプが赤く点滅しています。"),
                T("line_diagnostic", line="HN-77120"),
                R("line_diagnostic", fault="回線断", eta="明日 14:00"),
                A(
                    "ONUのランプの赤い点滅は回線の切断を示しています。明日の14時までに復旧の見込みです。",
                    said="オプティカル・ネットワーク・ユニットのランプの赤い点滅は回線の切断を示しています。明日の14時までに復旧の見込みです。",
                    tts=(ACRONYM,),
                ),
                U("料金は減額されますか。"),
                A("はい、24時間以上ご利用いただけなかった場合は、日割りで減額いたします。"),
            ],
        ),
    ],
    "ko": [
        (
            "hanggong-byeongyeong",
            "결항 후 항공편 변경",
            "김지현",
            [
                A("안녕하세요, 하늘항공 김지현입니다. 무엇을 도와드릴까요?"),
                U("오늘 오후 제주 가는 비행기가 결항됐는데요, 다른 편으로 바꾸고 싶어요."),
                A("불편을 드려 죄송합니다. 예약 번호(booking number)를 말씀해 주시겠어요?", speak=(GLOSS,)),
                U("H Q 4 8 Z T요."),
                T("find_booking", booking="HQ48ZT"),
                R("find_booking", passenger="박민준", options=["HA 1215 15:30", "HA 1221 19:00"]),
                A(
                    "박민준 고객님, 오후 3시 30분 HA 1215편이나 저녁 7시 HA 1221편으로 변경 가능합니다.",
                    said="박민준 고객님, 오후 삼 시 삼십 분 HA 1215편이나 저녁 칠 시 HA 1221편으로 변경 가능합니다.",
                    tts=(NUMBER,),
                ),
                U("3시 반 걸로 해 주세요."),
                T("rebook", booking="HQ48ZT", flight="HA 1215"),
                R("rebook", status="confirmed", seat="31A"),
                A("변경 완료되었습니다. 좌석은 31A입니다. 즐거운 여행 되세요."),
            ],
        ),
        (
            "kadeu-bunsil",
            "카드 분실 신고",
            "이수진",
            [
                A("한빛카드 분실신고센터 이수진입니다."),
                U("지갑을 잃어버려서 카드 정지하려고요."),
                A("네, 본인 확인을 위해 생년월일 여섯 자리를 말씀해 주세요."),
                U("구공공삼일오요. 900315."),
                T("verify_member", dob="900315"),
                R("verify_member", verified=True, name="최영호", cards=["신용 ****7702"]),
                A(
                    "최영호 고객님, 끝자리 7702 신용카드 정지 처리하겠습니다.",
                    said="최영호 고객님, 끝자리 칠천칠백이 신용카드 정지 처리하겠습니다.",
                    tts=(NUMBER,),
                ),
                T("block_card", card="****7702"),
                R("block_card", status="stopped", reissue_days=5),
                A("정지되었습니다. 재발급 카드는 5일 이내에 받아 보실 수 있습니다."),
                U("감사합니다."),
                A(
                    "감사합니다, 고객님. 항상 한빛카드를 이용해 주셔서 진심으로 감사드리며, 오늘도 행복하고 좋은 하루 보내시길 바랍니다.",
                    concise=(POLITENESS, VERBOSITY),
                ),
            ],
        ),
        (
            "yakguk",
            "처방약 재조제",
            "박서연",
            [
                A("행복약국 박서연 약사입니다."),
                U("안녕하세요, 지난번에 받은 고혈압 약 다시 받을 수 있을까요?"),
                T("check_stock", drug="로사르탄 50mg", tablets=30),
                R("check_stock", available=True),
                A(
                    "네, 로사르탄 50mg 30정 준비해 드릴게요. 처방전 유효기간이 남아 있어서 바로 가능합니다.",
                    said="네, 로사르탄 50밀리그램 서른 정 준비해 드릴게요. 처방전 유효기간이 남아 있어서 바로 가능합니다.",
                    tts=(NUMBER,),
                ),
                U("지금 가면 바로 받을 수 있나요?"),
                A(
                    "음, 그러니까, 뭐랄까, 한 십 분 정도, 네, 기다리시면 될 것 같아요.",
                    concise=(FILLER,),
                ),
            ],
        ),
        (
            "hotel-yeyak",
            "호텔 예약",
            "정우성",
            [
                A("바다뷰 호텔 정우성입니다."),
                U("다음 주 금요일부터 이틀, 성인 두 명 방 있나요?"),
                T("availability", nights=2, adults=2),
                R("availability", available=True, rate_krw=180000),
                A(
                    "네, 성인 2명 디럭스룸 가능합니다. 1박에 18만 원입니다.",
                    said="네, 성인 이 명 디럭스룸 가능합니다. 일 박에 십팔만 원입니다.",
                    tts=(NUMBER,),
                ),
                U("예약해 주세요. 이름은 한지민이에요."),
                T("book_room", name="한지민", nights=2),
                R("book_room", confirmation="BV-5521"),
                A(
                    "한지민 고객님, 예약 완료되었습니다. 예약 번호는 BV 5521입니다. Have a nice day!",
                    speak=(WRONG_LANGUAGE,),
                ),
            ],
        ),
        (
            "taekbae",
            "택배 배송 문의",
            "윤하늘",
            [
                A("빠른택배 고객센터 윤하늘입니다."),
                U("택배가 배송 완료라고 뜨는데 못 받았어요. 운송장 번호는 5 5 2 0 1 9 8 7 3 입니다."),
                T("track_parcel", tracking="552019873"),
                R("track_parcel", status="delivered", location="경비실"),
                A("확인해 보니 경비실에 맡겨 두었다고 기록되어 있습니다."),
                U("아, 경비실이요? 확인해 볼게요."),
                A(
                    "네, 혹시 없으시면 다시 연락 주세요.",
                    said="네, 혹시 없으시면",
                    tts=(TRUNCATION,),
                ),
            ],
        ),
        (
            "internet-jangae",
            "인터넷 장애",
            "강민호",
            [
                A("누리넷 고객센터 강민호입니다."),
                U("어제부터 와이파이가 자꾸 끊겨요. 공유기를 껐다 켜도 똑같아요."),
                T("line_diagnostic", account="NR-20817"),
                R("line_diagnostic", fault="공유기 불량", visit="내일 오전 10시"),
                A(
                    "공유기 불량으로 확인됩니다. 내일 오전 10시에 기사님이 방문해서 교체해 드리겠습니다.",
                    said="공유기 불량으로 확인됩니다. 내일 오전 십 시에 기사님이 방문해서 교체해 드리겠습니다.",
                    tts=(NUMBER,),
                ),
                U("요금은 따로 나오나요?"),
                A("아니요, 무상 교체입니다."),
            ],
        ),
    ],
}
