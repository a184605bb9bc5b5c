-- Run once, when the volume is first initialised: the database of scoring's archive beside the
-- wallet's (POSTGRES_DB).
CREATE DATABASE scoring;
