-- Exports started before exports were bound to a client go to their organization's first backend services client (the only kind that can start one); any left without one cannot be reached and go.
ALTER TABLE "bulk_exports" ADD COLUMN "client_id" text;--> statement-breakpoint
UPDATE "bulk_exports" SET "client_id" = (SELECT "smart_clients"."id" FROM "smart_clients" WHERE "smart_clients"."organization_id" = "bulk_exports"."organization_id" AND "smart_clients"."token_endpoint_auth_method" = 'private_key_jwt' ORDER BY "smart_clients"."created_at", "smart_clients"."id" LIMIT 1);--> statement-breakpoint
DELETE FROM "bulk_exports" WHERE "client_id" IS NULL;--> statement-breakpoint
ALTER TABLE "bulk_exports" ALTER COLUMN "client_id" SET NOT NULL;--> statement-breakpoint
ALTER TABLE "bulk_exports" ADD CONSTRAINT "bulk_exports_client_id_smart_clients_id_fk" FOREIGN KEY ("client_id") REFERENCES "public"."smart_clients"("id") ON DELETE cascade ON UPDATE no action;
