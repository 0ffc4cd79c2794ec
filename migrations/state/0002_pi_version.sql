-- The running Pi's version as the extension reported it at registration
-- (PUT /v1/sessions/{id} pi_version, e.g. "0.85.1" or "1.6.0"); '' = not
-- reported, which selects the newest projection rules.
ALTER TABLE registrations ADD COLUMN pi_version TEXT NOT NULL DEFAULT '';
