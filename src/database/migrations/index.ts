import { Initial1795319328222 } from './1795319328222-Initial';
import { CamerasEventsSettings1795321064636 } from './1795321064636-CamerasEventsSettings';
import { EventDescriptionTsv1795325152639 } from './1795325152639-EventDescriptionTsv';
import { AiCallsFeedback1795331144404 } from './1795331144404-AiCallsFeedback';
import { EventCountsRollup1795445523409 } from './1795445523409-EventCountsRollup';
import { ProtectControllers1795446650001 } from './1795446650001-ProtectControllers';

/**
 * Every migration, in order. A generated migration must be added here; `npm run migration:check`
 * (run by CI) fails when one is missing, because the schema would then differ from the entities.
 */
export const MIGRATIONS = [Initial1795319328222, CamerasEventsSettings1795321064636, EventDescriptionTsv1795325152639, AiCallsFeedback1795331144404, EventCountsRollup1795445523409, ProtectControllers1795446650001];
