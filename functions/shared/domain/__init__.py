"""Pure domain: vocabulary, records, and the decisions GPU Pilot makes over plain data. No I/O here."""
