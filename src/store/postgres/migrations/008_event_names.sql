-- Every event name received (event_properties holds only those with properties): the compile warns
-- of a leaf naming none of them (unknown_event). The events themselves are on ClickHouse: the names
-- known from their properties are carried over, the others are recorded as they arrive.

-- Up Migration

CREATE TABLE event_names (
  workspace_id text NOT NULL,
  event_name text NOT NULL,
  PRIMARY KEY (workspace_id, event_name)
);
INSERT INTO event_names SELECT DISTINCT workspace_id, event_name FROM event_properties;

-- Down Migration

DROP TABLE event_names;
