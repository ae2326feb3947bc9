"""Topics: what users ask about, found in the questions' embeddings (issue 41).

`discover` clusters a bounded sample into topics, choosing their number; `nearest_topic`
gives new questions a topic by nearest centroid; `match_topics` pairs new clusters with the
previous topics' ids (Hungarian), and `recluster` re-clusters anchored on the previous topics
so steady traffic keeps its ids; `topic_keywords` labels topics with their c-TF-IDF keywords
per language; `naming.name_topic` asks the LLM judge for a short name (imported from
there, so this package does not load the judge).
Pure functions over numpy arrays and texts: no database, no model (the caller embeds).
"""

from evaluators.topics.assign import Assignment, nearest_topic, similarity_floor
from evaluators.topics.cluster import Clustering, discover
from evaluators.topics.evolve import Topics, first_topics, recluster
from evaluators.topics.labels import TopicLabel, topic_keywords
from evaluators.topics.match import TopicMatch, kept_share, match_topics, relabel
from evaluators.topics.represent import SpaceOptions

__all__ = [
    "Assignment",
    "Clustering",
    "SpaceOptions",
    "TopicLabel",
    "TopicMatch",
    "Topics",
    "discover",
    "first_topics",
    "kept_share",
    "match_topics",
    "nearest_topic",
    "recluster",
    "relabel",
    "similarity_floor",
    "topic_keywords",
]
