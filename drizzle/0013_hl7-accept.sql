-- HL7 identities choose how strictly their messages are checked (issue 21): lenient by default.
ALTER TABLE "hl7_identities" ADD COLUMN "conformance" text DEFAULT 'lenient' NOT NULL;
