-- Whether a query is attached, so search can split its buckets without reading the JSON. The
-- JSON is written compactly and omits a null query, so the key's presence is the flag.
ALTER TABLE memories ADD COLUMN has_query INTEGER NOT NULL DEFAULT 0;
UPDATE memories SET has_query = instr(data, '"query":') > 0;
