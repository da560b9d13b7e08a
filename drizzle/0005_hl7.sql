ALTER TABLE "deliveries" ADD COLUMN "hl7_control_id" text;
--> statement-breakpoint
CREATE TABLE "hl7_identities" (
	"connection_id" text PRIMARY KEY NOT NULL,
	"organization_id" text NOT NULL,
	"receiving_application" text NOT NULL,
	"receiving_facility" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "hl7_identities" ADD CONSTRAINT "hl7_identities_connection_id_connections_id_fk" FOREIGN KEY ("connection_id") REFERENCES "public"."connections"("id") ON DELETE cascade ON UPDATE no action;
--> statement-breakpoint
ALTER TABLE "hl7_identities" ADD CONSTRAINT "hl7_identities_organization_id_organizations_id_fk" FOREIGN KEY ("organization_id") REFERENCES "public"."organizations"("id") ON DELETE cascade ON UPDATE no action;
--> statement-breakpoint
CREATE UNIQUE INDEX "hl7_identities_receiver_idx" ON "hl7_identities" USING btree ("receiving_application","receiving_facility");
