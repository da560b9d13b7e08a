-- Claim checks (webhooks/claim-check.ts): a large envelope waits here, under its delivery's id, until the delivery row takes it.
CREATE TABLE "staged_envelopes" (
	"delivery_id" text PRIMARY KEY NOT NULL,
	"organization_id" text NOT NULL,
	"envelope_body" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "staged_envelopes" ADD CONSTRAINT "staged_envelopes_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;
--> statement-breakpoint
CREATE INDEX "staged_envelopes_created_at_idx" ON "staged_envelopes" USING btree ("created_at");
