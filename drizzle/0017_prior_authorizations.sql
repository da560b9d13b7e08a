CREATE TABLE "prior_auth_settings" (
	"organization_id" text PRIMARY KEY NOT NULL,
	"pace" jsonb NOT NULL,
	"outcome" text,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "prior_auth_submissions" (
	"id" text PRIMARY KEY NOT NULL,
	"authorization_id" text NOT NULL,
	"request" jsonb NOT NULL,
	"summary" jsonb NOT NULL,
	"applied_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "prior_authorizations" (
	"id" text PRIMARY KEY NOT NULL,
	"organization_id" text NOT NULL,
	"claim_key" text NOT NULL,
	"workflow_id" text NOT NULL,
	"payer_id" text NOT NULL,
	"expedited" boolean NOT NULL,
	"requested_outcome" text,
	"outcome_source" text NOT NULL,
	"decision" text,
	"provider_identifiers" jsonb NOT NULL,
	"state" jsonb,
	"response" jsonb,
	"due_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"closed_at" timestamp with time zone,
	"expires_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
ALTER TABLE "prior_auth_settings" ADD CONSTRAINT "prior_auth_settings_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "prior_auth_submissions" ADD CONSTRAINT "prior_auth_submissions_authorization_id_prior_authorizations_id_fk" FOREIGN KEY ("authorization_id") REFERENCES "public"."prior_authorizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "prior_authorizations" ADD CONSTRAINT "prior_authorizations_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "prior_auth_submissions_authorization_idx" ON "prior_auth_submissions" USING btree ("authorization_id","created_at");--> statement-breakpoint
CREATE UNIQUE INDEX "prior_authorizations_claim_idx" ON "prior_authorizations" USING btree ("organization_id","claim_key");--> statement-breakpoint
CREATE INDEX "prior_authorizations_expires_at_idx" ON "prior_authorizations" USING btree ("expires_at");