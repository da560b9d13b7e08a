CREATE TABLE "fhir_subscriptions" (
	"id" text PRIMARY KEY NOT NULL,
	"organization_id" text NOT NULL,
	"status" text NOT NULL,
	"topic" text NOT NULL,
	"filters" jsonb NOT NULL,
	"endpoint" text NOT NULL,
	"headers" jsonb NOT NULL,
	"payload_mime" text NOT NULL,
	"content" text NOT NULL,
	"heartbeat_seconds" integer,
	"reason" text NOT NULL,
	"end_at" timestamp with time zone,
	"events_since_start" integer DEFAULT 0 NOT NULL,
	"error" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"deleted_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "subscription_notifications" (
	"subscription_id" text NOT NULL,
	"notice_key" text NOT NULL,
	"type" text NOT NULL,
	"event_number" integer,
	"delivery_id" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "subscription_notifications_subscription_id_notice_key_pk" PRIMARY KEY("subscription_id","notice_key")
);
--> statement-breakpoint
ALTER TABLE "deliveries" ADD COLUMN "subscription_id" text;--> statement-breakpoint
ALTER TABLE "fhir_subscriptions" ADD CONSTRAINT "fhir_subscriptions_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "subscription_notifications" ADD CONSTRAINT "subscription_notifications_subscription_id_fhir_subscriptions_id_fk" FOREIGN KEY ("subscription_id") REFERENCES "public"."fhir_subscriptions"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "fhir_subscriptions_organization_idx" ON "fhir_subscriptions" USING btree ("organization_id","topic","status");--> statement-breakpoint
ALTER TABLE "deliveries" ADD CONSTRAINT "deliveries_subscription_id_fhir_subscriptions_id_fk" FOREIGN KEY ("subscription_id") REFERENCES "public"."fhir_subscriptions"("id") ON DELETE no action ON UPDATE no action;