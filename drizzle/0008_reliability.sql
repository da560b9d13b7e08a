ALTER TABLE "idempotency_keys" ADD COLUMN "reservation" jsonb;
--> statement-breakpoint
ALTER TABLE "idempotency_keys" ADD COLUMN "claimed_by" text;
--> statement-breakpoint
ALTER TABLE "idempotency_keys" ADD COLUMN "claimed_at" timestamp with time zone;
--> statement-breakpoint
CREATE INDEX "idempotency_keys_expires_at_idx" ON "idempotency_keys" USING btree ("expires_at");
--> statement-breakpoint
ALTER TABLE "deliveries" ADD COLUMN "source_delivery_id" text;
--> statement-breakpoint
ALTER TABLE "deliveries" ADD CONSTRAINT "deliveries_source_delivery_id_deliveries_id_fk" FOREIGN KEY ("source_delivery_id") REFERENCES "public"."deliveries"("id") ON DELETE set null ON UPDATE no action;
--> statement-breakpoint
CREATE UNIQUE INDEX "deliveries_source_delivery_id_idx" ON "deliveries" USING btree ("source_delivery_id");
--> statement-breakpoint
CREATE INDEX "deliveries_created_at_idx" ON "deliveries" USING btree ("created_at");
--> statement-breakpoint
CREATE INDEX "smart_launches_expires_at_idx" ON "smart_launches" USING btree ("expires_at");
--> statement-breakpoint
CREATE INDEX "smart_authorizations_expires_at_idx" ON "smart_authorizations" USING btree ("expires_at");
--> statement-breakpoint
CREATE INDEX "smart_tokens_expires_at_idx" ON "smart_tokens" USING btree ("expires_at");
