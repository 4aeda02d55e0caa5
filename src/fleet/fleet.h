/*-------------------------------------------------------------------------
 *
 * fleet.h
 *		The repository's periodic work for the fleet (docs/fleet.md), which
 *		the archiver runs after each of its cycles (fleet.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef PGS_FLEET_H
#define PGS_FLEET_H

/* fleet.c */
extern void pgs_fleet_tick(void);

#endif							/* PGS_FLEET_H */
