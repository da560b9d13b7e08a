-- HL7 identities are scoped to their organization (unique per organization, so no 409 reveals another
-- organization's identity) and carry the SHA-256 of an MLLP token, the credential an MLLP message
-- sends in MSH-8. Identities set before tokens existed keep working over HTTP and get a token on PUT.
DROP INDEX "hl7_identities_receiver_idx";
--> statement-breakpoint
CREATE UNIQUE INDEX "hl7_identities_receiver_idx" ON "hl7_identities" USING btree ("organization_id","receiving_application","receiving_facility");
--> statement-breakpoint
ALTER TABLE "hl7_identities" ADD COLUMN "mllp_token_hash" text;
--> statement-breakpoint
ALTER TABLE "hl7_identities" ADD COLUMN "mllp_token_hint" text;
--> statement-breakpoint
CREATE UNIQUE INDEX "hl7_identities_mllp_token_idx" ON "hl7_identities" USING btree ("mllp_token_hash");
