"""The English → French word lists the translation task is generated from (written for this project).

Each line is one entry; fields are separated by spaces, and "a/b" gives an irregular plural.
    nouns:       english[/plural] french[/plural] gender       e.g. "horse cheval/chevaux m"
    adjectives:  english class french-forms                     forms: ms [fs [mp fp]] [+ms-before-a-vowel]
An adjective's class fixes where it goes: "pre" adjectives come before the noun in French
(grand, petit …); every other class follows the noun. English orders adjectives by class
(opinion, size, age, shape, colour, origin, purpose), and French mirrors the ones after the noun:
"the European economic area" → "la zone économique européenne".
"""

from __future__ import annotations

from dataclasses import dataclass

# Adjective classes in English order; "pre" adjectives take their own English rank (size, age, …).
CLASSES = ("opinion", "size", "age", "shape", "colour", "origin", "purpose")


@dataclass(frozen=True)
class Noun:
    en: str
    en_pl: str
    fr: str
    fr_pl: str
    gender: str  # "m" or "f"


@dataclass(frozen=True)
class Adjective:
    en: str
    rank: int  # position in English order (CLASSES)
    pre: bool  # comes before the noun in French
    ms: str
    fs: str
    mp: str
    fp: str
    ms_vowel: str  # masculine singular before a vowel (bel, nouvel, vieil); usually = ms

    def form(self, gender: str, plural: bool, before_vowel: bool = False) -> str:
        if plural:
            return self.mp if gender == "m" else self.fp
        if gender == "f":
            return self.fs
        return self.ms_vowel if before_vowel else self.ms


@dataclass(frozen=True)
class Determiner:
    en: str  # singular
    en_pl: str | None  # plural (None: singular only)
    ms: str
    fs: str
    vowel_m: str  # before a vowel: l', cet, mon
    vowel_f: str
    fr_pl: str | None

    def form(self, gender: str, plural: bool, before_vowel: bool) -> str:
        if plural:
            return self.fr_pl
        if before_vowel:
            return self.vowel_m if gender == "m" else self.vowel_f
        return self.ms if gender == "m" else self.fs


ANIMATE_TEXT = """
cat chat m;dog chien m;horse cheval/chevaux m;cow vache f;bird oiseau/oiseaux m;mouse/mice souris/souris f
rabbit lapin m;bear ours/ours m;wolf/wolves loup m;fox/foxes renard m;lion lion m;tiger tigre m
elephant éléphant m;snake serpent m;duck canard m;hen poule f;goat chèvre f;pig cochon m;frog grenouille f
spider araignée f;bee abeille f;butterfly/butterflies papillon m;whale baleine f;monkey singe m;turtle tortue f
ant fourmi f;squirrel écureuil m;donkey âne m;insect insecte m;eagle aigle m;dolphin dauphin m
man/men homme m;woman/women femme f;child/children enfant m;boy garçon m;girl fille f;friend ami m
teacher professeur m;doctor médecin m;student étudiant m;king roi m;queen reine f;brother frère m
sister sœur f;mother mère f;father père m;baby/babies bébé m;neighbour voisin m;farmer fermier m
singer chanteur m;painter peintre m;soldier soldat m;actor acteur m;writer écrivain m;cook cuisinier m
uncle oncle m;aunt tante f
"""

THINGS_TEXT = """
apple pomme f;bread pain m;cheese fromage m;cake gâteau/gâteaux m;egg œuf m;water eau/eaux f
wine vin m;soup soupe f;banana banane f;lemon citron m;strawberry/strawberries fraise f;carrot carotte f
tomato/tomatoes tomate f;coffee café m;tea thé m
juice jus/jus m;pie tarte f;sandwich/sandwiches sandwich m;cherry/cherries cerise f;pear poire f
grape raisin m;onion oignon m
house maison f;door porte f;table table f;chair chaise f;bed lit m;window fenêtre f;bedroom chambre f
kitchen cuisine f;garden jardin m;lamp lampe f;mirror miroir m;clock horloge f;key clé f;box/boxes boîte f
cup tasse f;glass/glasses verre m;plate assiette f;knife/knives couteau/couteaux m;fork fourchette f
spoon cuillère f;bottle bouteille f;bag sac m;book livre m;letter lettre f;pen stylo m;pencil crayon m
paper papier m;picture tableau/tableaux m;carpet tapis/tapis m;sofa canapé m;roof toit m;wall mur m
blanket couverture f;pillow oreiller m;towel serviette f;umbrella parapluie m;hat chapeau/chapeaux m
shoe chaussure f;shirt chemise f;dress/dresses robe f;coat manteau/manteaux m;scarf/scarves écharpe f
glove gant m;ring bague f
city/cities ville f;village village m;street rue f;road route f;bridge pont m;church/churches église f
school école f;hospital hôpital/hôpitaux m;hotel hôtel m;museum musée m;library/libraries bibliothèque f
station gare f;airport aéroport m;island île f;mountain montagne f;river rivière f;lake lac m;sea mer f
beach/beaches plage f;forest forêt f;tree arbre m;flower fleur f;field champ m;sun soleil m;moon lune f
star étoile f;cloud nuage m;stone pierre f;country/countries pays/pays m;shop magasin m;park parc m
farm ferme f;castle château/châteaux m;tower tour f;desert désert m;valley/valleys vallée f;cave grotte f
port port m;office bureau/bureaux m;restaurant restaurant m;theatre théâtre m;cinema cinéma m
planet planète f;world monde m;ocean océan m;wind vent m;fire feu/feux m;leaf/leaves feuille f
grass herbe f;wood bois/bois m
car voiture f;bus/buses bus/bus m;train train m;plane avion m;boat bateau/bateaux m;bicycle vélo m
ship navire m;truck camion m;taxi taxi m;motorcycle moto f
computer ordinateur m;phone téléphone m;television télévision f;radio radio f;piano piano m
guitar guitare f;violin violon m;drum tambour m;ball balle f;toy jouet m;doll poupée f;map carte f
ticket billet m;gift cadeau/cadeaux m;candle bougie f;newspaper journal/journaux m;song chanson f
story/stories histoire f;game jeu/jeux m;film film m;photo photo f;coin pièce f;wallet portefeuille m
basket panier m;bucket seau/seaux m;rope corde f;wheel roue f;engine moteur m;machine machine f
robot robot m;tool outil m;hammer marteau/marteaux m;ladder échelle f;shelf/shelves étagère f
drawer tiroir m;idea idée f;question question f;answer réponse f;dream rêve m;name nom m;word mot m
day jour m;night nuit f;morning matin m;evening soir m;week semaine f;hour heure f;minute minute f
winter hiver m;summer été m;autumn automne m
"""

# Nouns the institutional phrases use ("the European economic area", "the national central bank").
INSTITUTIONS_TEXT = """
area zone f;union union f;community/communities communauté f;market marché m;bank banque f
council conseil m;agency/agencies agence f;policy/policies politique f;space espace m;system système m
parliament parlement m;court cour f;commission commission f;fund fonds/fonds m;treaty/treaties traité m
region région f;university/universities université f;army/armies armée f;government gouvernement m
party/parties parti m;institute institut m;organisation organisation f;programme programme m
network réseau/réseaux m;crisis/crises crise f;reform réforme f;strategy/strategies stratégie f
alliance alliance f;federation fédération f;republic république f;centre centre m;summit sommet m
"""

ADJECTIVES_TEXT = """
good opinion pre bon bonne;bad opinion pre mauvais mauvaise;pretty opinion pre joli;nice opinion pre gentil gentille
beautiful opinion pre beau belle beaux belles +bel;big size pre grand;small size pre petit
fat size pre gros grosse gros grosses;high size pre haut;long size pre long longue
young age pre jeune;old age pre vieux vieille vieux vieilles +vieil
new age pre nouveau nouvelle nouveaux nouvelles +nouvel
happy opinion heureux heureuse heureux heureuses;sad opinion triste;strange opinion étrange
delicious opinion délicieux délicieuse délicieux délicieuses
dangerous opinion dangereux dangereuse dangereux dangereuses
famous opinion célèbre;brave opinion courageux courageuse courageux courageuses
lazy opinion paresseux paresseuse paresseux paresseuses
curious opinion curieux curieuse curieux curieuses;intelligent opinion intelligent;polite opinion poli
funny opinion drôle
calm opinion calme;noisy opinion bruyant;tired opinion fatigué;rich opinion riche;honest opinion honnête
elegant opinion élégant;important opinion important;expensive opinion cher chère chers chères
difficult opinion difficile
easy opinion facile;useful opinion utile;popular opinion populaire
round shape rond;square shape carré;flat shape plat;narrow shape étroit;wide shape large;heavy shape lourd
light shape léger légère légers légères;empty shape vide;full shape plein;hot shape chaud;cold shape froid
dry shape sec sèche secs sèches;wet shape mouillé;soft shape doux douce doux douces;hard shape dur
fast shape rapide;slow shape lent;clean shape propre;dirty shape sale;closed shape fermé;broken shape cassé
quiet shape silencieux silencieuse silencieux silencieuses;sweet shape sucré
red colour rouge;blue colour bleu;green colour vert;yellow colour jaune;black colour noir
white colour blanc blanche blancs blanches;grey colour gris grise gris grises;brown colour marron marron marron marron
pink colour rose;purple colour violet violette violets violettes;orange colour orange orange orange orange
golden colour doré
european origin européen européenne;french origin français française;italian origin italien italienne
german origin allemand;spanish origin espagnol;english origin anglais;american origin américain
african origin africain;asian origin asiatique;chinese origin chinois;japanese origin japonais;russian origin russe
british origin britannique;nordic origin nordique;arctic origin arctique
mediterranean origin méditerranéen méditerranéenne
canadian origin canadien canadienne;mexican origin mexicain;greek origin grec grecque grecs grecques;swiss origin suisse
economic purpose économique;political purpose politique;social purpose social sociale sociaux sociales
cultural purpose culturel culturelle;military purpose militaire
commercial purpose commercial commerciale commerciaux commerciales
industrial purpose industriel industrielle;agricultural purpose agricole;financial purpose financier financière
monetary purpose monétaire;nuclear purpose nucléaire;public purpose public publique publics publiques
national purpose national nationale nationaux nationales
international purpose international internationale internationaux internationales
central purpose central centrale centraux centrales;regional purpose régional régionale régionaux régionales
scientific purpose scientifique;medical purpose médical médicale médicaux médicales;digital purpose numérique
"""

# (English singular, English plural, le/ce/mon…: m, f, m before a vowel, f before a vowel, plural)
DETERMINERS = {
    "the": Determiner("the", "the", "le", "la", "l'", "l'", "les"),
    "a": Determiner("a", None, "un", "une", "un", "une", None),
    "this": Determiner("this", "these", "ce", "cette", "cet", "cette", "ces"),
    "my": Determiner("my", "my", "mon", "ma", "mon", "mon", "mes"),
    "your": Determiner("your", "your", "votre", "votre", "votre", "votre", "vos"),
    "our": Determiner("our", "our", "notre", "notre", "notre", "notre", "nos"),
    "their": Determiner("their", "their", "leur", "leur", "leur", "leur", "leurs"),
    "his": Determiner("his", "his", "son", "sa", "son", "son", "ses"),
    "her": Determiner("her", "her", "son", "sa", "son", "son", "ses"),
}
AN = "an"  # the English form of "a" before a vowel sound

# English number → French; "one" takes the noun's gender (un / une), the others are plural.
NUMBERS = {
    "one": "un",
    "two": "deux",
    "three": "trois",
    "four": "quatre",
    "five": "cinq",
    "six": "six",
    "seven": "sept",
    "eight": "huit",
    "nine": "neuf",
    "ten": "dix",
    "eleven": "onze",
    "twelve": "douze",
    "twenty": "vingt",
}

# English (3rd person singular, plural) → French (singular, plural), present tense: "sees see voit voient".
VERBS_TEXT = """
sees see voit voient;likes like aime aiment;eats eat mange mangent;finds find trouve trouvent
follows follow suit suivent
wants want veut veulent;takes take prend prennent;watches watch regarde regardent;buys buy achète achètent
sells sell vend vendent
paints paint peint peignent;draws draw dessine dessinent;visits visit visite visitent
"""


PREPOSITIONS = {
    "with": "avec",
    "without": "sans",
    "under": "sous",
    "on": "sur",
    "in": "dans",
    "behind": "derrière",
    "for": "pour",
    "against": "contre",
    "after": "après",
    "before": "avant",
    "towards": "vers",
}

# The French words that elide like a vowel although they start with "h" (h muet).
H_MUET = {
    "homme", "hommes", "hôtel", "hôtels", "hôpital", "hôpitaux", "heure", "heures",
    "hiver", "hivers", "histoire", "histoires", "herbe", "herbes", "honnête", "honnêtes",
}
# English words after which "a" stays "a" although they start with a vowel letter (a "you" sound), and the reverse.
EN_CONSONANT_SOUND = ("european", "university", "union", "useful")
EN_VOWEL_SOUND = ("hour", "honest")


def starts_with_vowel_fr(word: str) -> bool:
    return word[0] in "aàâeéèêëiîïoôœuùûy" or word in H_MUET


def starts_with_vowel_en(word: str) -> bool:
    return (word[0] in "aeiou" and not word.startswith(EN_CONSONANT_SOUND)) or word.startswith(EN_VOWEL_SOUND)


def _plural(word: str, lang: str) -> str:
    """The regular plural: + s, or the word itself when it ends in s/x/z; English -y → -ies, -s/-sh/-ch/-x → -es."""
    if lang == "fr":
        return word if word.endswith(("s", "x", "z")) else word + "s"
    if word.endswith("y") and word[-2] not in "aeiou":
        return word[:-1] + "ies"
    return word + "es" if word.endswith(("s", "sh", "ch", "x")) else word + "s"


def _entries(text: str) -> list[str]:
    """A table's entries: separated by ";" or a line break."""
    return [e for e in text.replace("\n", ";").split(";") if e.strip()]


def _nouns(text: str) -> tuple[Noun, ...]:
    out = []
    for entry in _entries(text):
        en, fr, gender = entry.split()
        en, _, en_pl = en.partition("/")
        fr, _, fr_pl = fr.partition("/")
        out.append(Noun(en, en_pl or _plural(en, "en"), fr, fr_pl or _plural(fr, "fr"), gender))
    return tuple(out)


def _adjectives(text: str) -> tuple[Adjective, ...]:
    out = []
    for entry in _entries(text):
        en, cls, *forms = entry.split()
        pre = forms[0] == "pre"
        forms = forms[1:] if pre else forms
        vowel = [f[1:] for f in forms if f.startswith("+")]
        ms, *rest = [f for f in forms if not f.startswith("+")]
        fs = rest[0] if rest else (ms if ms.endswith("e") else ms + "e")
        mp, fp = rest[1:3] if len(rest) == 3 else (_plural(ms, "fr"), _plural(fs, "fr"))
        out.append(Adjective(en, CLASSES.index(cls), pre, ms, fs, mp, fp, vowel[0] if vowel else ms))
    return tuple(out)


ANIMATE = _nouns(ANIMATE_TEXT)  # people and animals: the subjects of sentences
NOUNS = ANIMATE + _nouns(THINGS_TEXT)
INSTITUTIONS = _nouns(INSTITUTIONS_TEXT)
ADJECTIVES = _adjectives(ADJECTIVES_TEXT)
VERBS = {en: (en_pl, fr, fr_pl) for en, en_pl, fr, fr_pl in map(str.split, _entries(VERBS_TEXT))}
# The adjectives of institutional phrases: a region ("European") and a field ("economic").
REGIONS = tuple(a for a in ADJECTIVES if CLASSES[a.rank] == "origin")
FIELDS = tuple(a for a in ADJECTIVES if CLASSES[a.rank] == "purpose")
COLOURS = tuple(a for a in ADJECTIVES if CLASSES[a.rank] == "colour")
