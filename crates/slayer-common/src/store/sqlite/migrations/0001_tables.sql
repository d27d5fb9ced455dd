CREATE TABLE datasources (
    name TEXT PRIMARY KEY,
    data TEXT NOT NULL
);
CREATE TABLE models (
    data_source TEXT NOT NULL,
    name TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (data_source, name)
);
CREATE TABLE memories (
    id TEXT PRIMARY KEY,
    data TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE TABLE memory_entities (
    memory_id TEXT NOT NULL REFERENCES memories(id) ON DELETE CASCADE,
    entity TEXT NOT NULL,
    PRIMARY KEY (memory_id, entity)
);
CREATE INDEX idx_memory_entities_entity ON memory_entities(entity);
CREATE TABLE docs (
    canonical_id TEXT PRIMARY KEY,
    doc_kind TEXT NOT NULL,
    datasource TEXT,
    model TEXT,
    position INTEGER NOT NULL,
    text TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    embedding_text TEXT
);
CREATE INDEX idx_docs_datasource ON docs(datasource);
CREATE TABLE index_state (
    canonical_id TEXT PRIMARY KEY,
    content_hash TEXT NOT NULL
);
CREATE TABLE embeddings (
    canonical_id TEXT NOT NULL,
    model_name TEXT NOT NULL,
    content_hash TEXT NOT NULL,
    dim INTEGER NOT NULL,
    vector BLOB NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (canonical_id, model_name)
);
CREATE TABLE settings (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL
);
