-- SMART Backend Services: a client may hold a JWK Set (inline or by URL) and authenticate with a
-- signed assertion (private_key_jwt); the assertions' jti values are kept until they expire so
-- none is accepted twice.
CREATE TABLE "smart_client_assertions" (
	"client_id" text NOT NULL,
	"jti" text NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	CONSTRAINT "smart_client_assertions_client_id_jti_pk" PRIMARY KEY("client_id","jti")
);
--> statement-breakpoint
ALTER TABLE "smart_clients" ADD COLUMN "jwks" jsonb;--> statement-breakpoint
ALTER TABLE "smart_clients" ADD COLUMN "jwks_uri" text;--> statement-breakpoint
ALTER TABLE "smart_client_assertions" ADD CONSTRAINT "smart_client_assertions_client_id_smart_clients_id_fk" FOREIGN KEY ("client_id") REFERENCES "public"."smart_clients"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "smart_client_assertions_expires_at_idx" ON "smart_client_assertions" USING btree ("expires_at");
