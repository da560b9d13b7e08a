CREATE TABLE "deliveries" (
	"id" text PRIMARY KEY NOT NULL,
	"organization_id" text NOT NULL,
	"connection_id" text,
	"scenario_id" text,
	"event" text NOT NULL,
	"environment" text NOT NULL,
	"status" text NOT NULL,
	"envelope_body" text NOT NULL,
	"next_attempt_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "delivery_attempts" (
	"id" text PRIMARY KEY NOT NULL,
	"delivery_id" text NOT NULL,
	"number" integer NOT NULL,
	"trigger" text NOT NULL,
	"started_at" timestamp with time zone NOT NULL,
	"duration_ms" integer NOT NULL,
	"target_url" text,
	"target_source" text,
	"outcome" text NOT NULL,
	"response_status" integer,
	"response_body" text,
	"retry_after_ms" integer,
	"error" text,
	"chaos" text
);
--> statement-breakpoint
CREATE TABLE "reliability_profiles" (
	"organization_id" text PRIMARY KEY NOT NULL,
	"profile" jsonb NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "deliveries" ADD CONSTRAINT "deliveries_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "deliveries" ADD CONSTRAINT "deliveries_connection_id_connections_id_fk" FOREIGN KEY ("connection_id") REFERENCES "public"."connections"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "delivery_attempts" ADD CONSTRAINT "delivery_attempts_delivery_id_deliveries_id_fk" FOREIGN KEY ("delivery_id") REFERENCES "public"."deliveries"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "reliability_profiles" ADD CONSTRAINT "reliability_profiles_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "deliveries_organization_id_idx" ON "deliveries" USING btree ("organization_id","id");--> statement-breakpoint
CREATE INDEX "deliveries_organization_status_idx" ON "deliveries" USING btree ("organization_id","status","id");--> statement-breakpoint
CREATE UNIQUE INDEX "delivery_attempts_delivery_number_idx" ON "delivery_attempts" USING btree ("delivery_id","number");