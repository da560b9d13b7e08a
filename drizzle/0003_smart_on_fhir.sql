CREATE TABLE "smart_authorizations" (
	"id" text PRIMARY KEY NOT NULL,
	"client_id" text NOT NULL,
	"launch_kind" text NOT NULL,
	"redirect_uri" text NOT NULL,
	"state" text NOT NULL,
	"scope" text NOT NULL,
	"code_challenge" text NOT NULL,
	"nonce" text,
	"patient_id" text,
	"encounter_id" text,
	"fhir_user" text,
	"code_hash" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"exchanged_at" timestamp with time zone,
	"revoked_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "smart_clients" (
	"id" text PRIMARY KEY NOT NULL,
	"organization_id" text NOT NULL,
	"name" text NOT NULL,
	"redirect_uris" jsonb NOT NULL,
	"scope" text,
	"token_endpoint_auth_method" text NOT NULL,
	"launch_uri" text,
	"secret_hash" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "smart_launches" (
	"handle_hash" text PRIMARY KEY NOT NULL,
	"client_id" text NOT NULL,
	"patient_id" text NOT NULL,
	"encounter_id" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"used_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "smart_signing_keys" (
	"purpose" text PRIMARY KEY NOT NULL,
	"kid" text NOT NULL,
	"algorithm" text NOT NULL,
	"private_jwk" jsonb NOT NULL,
	"public_jwk" jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "smart_tokens" (
	"id" text PRIMARY KEY NOT NULL,
	"authorization_id" text NOT NULL,
	"kind" text NOT NULL,
	"scope" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"revoked_at" timestamp with time zone
);
--> statement-breakpoint
ALTER TABLE "smart_authorizations" ADD CONSTRAINT "smart_authorizations_client_id_smart_clients_id_fk" FOREIGN KEY ("client_id") REFERENCES "public"."smart_clients"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "smart_clients" ADD CONSTRAINT "smart_clients_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "smart_launches" ADD CONSTRAINT "smart_launches_client_id_smart_clients_id_fk" FOREIGN KEY ("client_id") REFERENCES "public"."smart_clients"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "smart_tokens" ADD CONSTRAINT "smart_tokens_authorization_id_smart_authorizations_id_fk" FOREIGN KEY ("authorization_id") REFERENCES "public"."smart_authorizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "smart_authorizations_code_hash_idx" ON "smart_authorizations" USING btree ("code_hash");--> statement-breakpoint
CREATE INDEX "smart_authorizations_client_idx" ON "smart_authorizations" USING btree ("client_id");--> statement-breakpoint
CREATE INDEX "smart_clients_organization_idx" ON "smart_clients" USING btree ("organization_id","id");--> statement-breakpoint
CREATE INDEX "smart_tokens_authorization_idx" ON "smart_tokens" USING btree ("authorization_id");